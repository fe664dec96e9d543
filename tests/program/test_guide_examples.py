"""The user guide's YAML examples (tests/data/guide/, copied verbatim from the GenericJob user guide), applied
with kubectl to `genericjob-controller local` as a reader of the guide would, each reaching the outcome the
guide describes.

The guide shows most examples in part: `...` stands for the rest of a job, and a container given only its
resources or env is the first example's container with those added. `completed` fills those in from the
first example's job (its replicas and template; its rules are its own point, not the rest of every job).
What the guide cannot say for us (the replica types that its rules example names) is given here, next
to the example it completes. Each example runs in a namespace of its own, all against one `local` (in the test's
process: local_inprocess.py).
"""

from __future__ import annotations

import asyncio
import json
from itertools import zip_longest
from pathlib import Path

import pytest
import yaml

from localcluster.testing import Kubectl
from tests.slow import starts_processes

from .local_inprocess import LocalRun
from .subprocesses import ROOT, until

GUIDE = ROOT / "tests" / "data" / "guide"
FIRST = GUIDE / "01-basic.yaml"
JOB = "generic-example"  # every example's name
# The guide's status example writes `Initializing` for the condition type its text (and the API) calls
# Initialized, and `status` for the replica records the API reference calls `replicas`
# (docs/SPEC-DECISIONS.md).
GUIDE_SPELLINGS = {"Initializing": "Initialized", "status": "replicas"}


def documents(name: str) -> list[dict]:
    """The example's documents, with the guide's elisions taken out: a line `...` (the rest of the job) and
    a list item `- ...` (the first example's item, with what follows added)."""
    lines = [line.replace("- ...", "-") for line in (GUIDE / name).read_text().splitlines()
             if line.strip() != "..."]
    return [doc for doc in yaml.safe_load_all("\n".join(lines)) if doc]


def laid_over(base, part):
    """`part` over `base`: mappings merged key by key, lists of mappings item by item, anything else replaced."""
    if isinstance(base, dict) and isinstance(part, dict):
        return {**base, **{key: laid_over(base[key], value) if key in base else value for key, value in part.items()}}
    if isinstance(base, list) and isinstance(part, list) and all(isinstance(i, dict) for i in base + part):
        return [item if other is None else other if item is None else laid_over(item, other)
                for item, other in zip_longest(base, part)]
    return part


def first_job_without_rules() -> dict:
    job = yaml.safe_load(FIRST.read_text())
    del job["spec"]["successRules"], job["spec"]["failureRules"]
    return job


def completed(name: str, base: dict | None = None) -> list[dict]:
    """The example's jobs as a whole: each document laid over `base` (the first example's job, its rules aside)."""
    return [laid_over(base or first_job_without_rules(), doc) for doc in documents(name)]


def rules_job(master: list[str], worker: list[str]) -> dict:
    """For the rules example, which names masters (ranks 0 and 2) and workers (0 to 2): three of each."""
    def replica(kind: str, command: list[str]) -> dict:
        return {"type": kind, "replicas": 3,
                "template": {"spec": {"containers": [{"name": kind, "image": "busybox", "command": command}]}}}
    base = first_job_without_rules()
    base["spec"]["replicaSpecs"] = [replica("master", master), replica("worker", worker)]
    return base


class Guide:
    """kubectl against the `local` under test, one namespace per example."""

    def __init__(self, kubectl: Kubectl, workdir: Path) -> None:
        self.kubectl = kubectl
        self.workdir = workdir

    async def apply(self, namespace: str, path_or_job: Path | dict) -> None:
        await self.kubectl.ok("create", "namespace", namespace)
        if isinstance(path_or_job, dict):  # as a file, as a reader would save the completed example
            path = self.workdir / f"{namespace}.yaml"
            path.write_text(yaml.safe_dump(path_or_job, sort_keys=False))
            path_or_job = path
        await self.kubectl.ok("apply", "-n", namespace, "-f", str(path_or_job))

    async def refused(self, namespace: str, job: dict) -> str:
        """What kubectl prints when the API server refuses to create `job` (as a file, as `apply` writes it)."""
        await self.kubectl.ok("create", "namespace", namespace)
        path = self.workdir / f"{namespace}.yaml"
        path.write_text(yaml.safe_dump(job, sort_keys=False))
        done = await self.kubectl.run("apply", "-n", namespace, "-f", str(path))
        assert done.code == 1, done.out
        return done.err

    async def job(self, namespace: str) -> dict:
        return json.loads((await self.kubectl.ok("get", "genericjob", JOB, "-n", namespace, "-o", "json")).out)

    async def pods(self, namespace: str, count: int) -> list[dict]:
        """The job's pods once there are `count`, in name order."""
        async def listed():
            found = json.loads((await self.kubectl.ok("get", "pods", "-n", namespace, "-o", "json")).out)["items"]
            return sorted(found, key=lambda p: p["metadata"]["name"]) if len(found) == count else None
        return await until(listed, timeout=60, what=f"{count} pods in {namespace}", interval=0.3)

    async def debug_attempts(self, namespace: str, count: int) -> tuple[set[str], list[str]]:
        """Once a pod was made for each of `count` replicas (their SuccessfulCreate Events): the commands of the
        pods seen meanwhile, and the Warning Events' messages. Pods that end are replaced, so they come and go."""
        commands: set[str] = set()

        async def made():
            pods = json.loads((await self.kubectl.ok("get", "pods", "-n", namespace, "-o", "json")).out)["items"]
            commands.update(json.dumps(c["command"]) for c in containers(pods))
            events = json.loads((await self.kubectl.ok("get", "events", "-n", namespace, "-o", "json")).out)["items"]
            created = {e["message"] for e in events if e["reason"] == "SuccessfulCreate"}
            warnings = [e["message"] for e in events if e["type"] == "Warning"]
            return (commands, warnings) if len(created) >= count else None
        return await until(made, timeout=60, what=f"{count} pods made in {namespace}", interval=0.3)

    async def phase(self, namespace: str, phase: str) -> dict:
        await self.kubectl.ok("wait", "-n", namespace, f"genericjob/{JOB}", f"--for=jsonpath={{.status.phase}}={phase}",
                              "--timeout=60s")
        return await self.job(namespace)

    async def resume(self, namespace: str) -> None:
        await self.kubectl.ok("patch", "-n", namespace, "genericjob", JOB, "--type=merge",
                              "-p", '{"spec": {"runMode": {"pause": {"enabled": false}}}}')


def condition(job: dict, kind: str) -> dict:
    return next(c for c in job["status"]["conditions"] if c["type"] == kind)


def rule_of(message: str) -> dict:
    """`The job is failed with rule: { "worker": [0] }` -> {"worker": [0]} (the guide spaces it its own way; the
    controller adds the cause after the rule: `...: replica worker-0 failed with exit code 1 ...`)."""
    rule, _ = json.JSONDecoder().raw_decode(message.partition("rule: ")[2])
    return rule


def containers(pods: list[dict]) -> list[dict]:
    return [pod["spec"]["containers"][0] for pod in pods]


@pytest.fixture
@starts_processes
async def guide(tmp_path):
    async with LocalRun(tmp_path, "--port", "0", "--kubeconfig-out", str(tmp_path / "kubeconfig")) as running:
        yield Guide(Kubectl(running.kubeconfig, tmp_path), tmp_path)


def test_every_example_of_the_guide_is_here_and_whole_once_completed():
    names = sorted(p.name for p in GUIDE.glob("*.yaml"))
    assert len(names) == 13  # the guide's 13 YAML blocks
    for name in names[1:10]:
        for job in completed(name):
            container = job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
            assert container["name"] and container["image"] and container["command"], (name, container)


@pytest.mark.timeout(300)
async def test_the_guides_examples_reach_the_outcomes_it_describes(guide):
    debug_one, debug_two = completed("09-debug.yaml")
    pause_one, pause_two = completed("10-pause.yaml")
    [tf_config] = completed("05-tf-config.yaml")
    [with_service] = completed("07-service.yaml")
    [rules] = documents("06-rules.yaml")
    applied = {
        "basic": FIRST,  # as it is: a whole job
        "resources": completed("02-resources.yaml")[0],
        "shared-memory": completed("03-shared-memory.yaml")[0],
        "env": completed("04-env.yaml")[0],
        "tf-config-service": laid_over(with_service, tf_config),
        "rules-success": laid_over(rules_job(["sleep", "365"], ["true"]), rules),
        "rules-failure": laid_over(rules_job(["false"], ["sleep", "365"]), rules),
        "service": with_service,
        "scheduler": completed("08-scheduler.yaml")[0],
        "debug-one": debug_one, "debug-two": debug_two, "pause-one": pause_one, "pause-two": pause_two,
    }
    await asyncio.gather(*(guide.apply(namespace, job) for namespace, job in applied.items()))  # as many terminals
    await guide.kubectl.ok("create", "secret", "generic", "secret-name", "-n", "env",  # the env example's Secret
                           "--from-literal=key-in-secret=from-a-secret")

    # Each example is checked as it reaches its outcome: its checks all run at once, as they wait mostly (for
    # kubectl, for a phase), each in its own namespace.

    # The first example: four workers running `sleep 365`; it fails when worker 0 fails (here: deleted).
    async def first_example() -> None:
        running = await guide.phase("basic", "Running")
        pods = await guide.pods("basic", 4)
        assert [p["metadata"]["name"] for p in pods] == [f"{JOB}-worker-{rank}" for rank in range(4)]
        assert {json.dumps(c["command"]) for c in containers(pods)} == {'["sleep", "365"]'}
        assert [r["phase"] for r in running["status"]["tasks"][0]["replicas"]] == ["Running"] * 4
        await guide.kubectl.ok("delete", "pod", f"{JOB}-worker-0", "-n", "basic")
        failed = await guide.phase("basic", "Failed")
        _the_status_reads_as_the_guides(failed)

    # Resources and shared memory: passed through to every replica's pod.
    async def passed_through() -> None:
        for container in containers(await guide.pods("resources", 4)):
            # (As quantities: a real API server writes `cpu: 4` back as "4"; localcluster keeps the number.)
            quantities = {use: {name: str(value) for name, value in amounts.items()}
                          for use, amounts in container["resources"].items()}
            assert quantities == {"limits": {"cpu": "4", "memory": "4Gi"}, "requests": {"cpu": "2", "memory": "2Gi"}}
        for pod in await guide.pods("shared-memory", 4):
            # then, as on a real cluster, the ServiceAccount admission plugin's token volume
            mount, token_mount = pod["spec"]["containers"][0]["volumeMounts"]
            volume, token = pod["spec"]["volumes"]
            assert mount == {"mountPath": "/dev/shm", "name": "dshm"}
            assert volume == {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}
            assert token["name"].startswith("kube-api-access-") and token_mount == {
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": token["name"], "readOnly": True}
        # Environment: a value and a reference to a Secret's key, both as given.
        for container in containers(await guide.pods("env", 4)):
            assert container["env"] == [
                {"name": "ENV_DIRECT", "value": "env-value"},
                {"name": "ENV_REFERENCED",
                 "valueFrom": {"secretKeyRef": {"name": "secret-name", "key": "key-in-secret"}}}]

    # Variable substitution: the service variables exist only when the replicas' Services do: without them the
    # job is refused at `kubectl apply` by the admission webhook, naming the field (`local` runs it)...
    async def variables() -> None:
        refused = await guide.refused("tf-config", tf_config)
        assert 'The GenericJob "generic-example" is invalid: ' in refused and "service variables need spec.service" in \
            refused and "spec.replicaSpecs[0].template.spec.containers[0].env[0].value: " in refused, refused
        # ... and with the service example's ports, each worker gets the whole cluster and its own task.
        hosts = ",".join(f'"{JOB}-worker-{rank}:2222"' for rank in range(4))
        for rank, container in enumerate(containers(await guide.pods("tf-config-service", 4))):
            assert container["env"] == [{"name": "TF_CONFIG", "value": (
                f'{{"task":{{"type":"worker","index":{rank}}},"cluster":{{"worker":[{hosts}]}}}}')}]

    # Success and failure rules: workers 0, 1 and 2 done succeed the job; master 0 failed fails it.
    async def rule_outcomes() -> None:
        succeeded = await guide.phase("rules-success", "Succeeded")
        assert rule_of(condition(succeeded, "Completed")["message"]) == {"worker": [0, 1, 2]}
        failed_by_master = await guide.phase("rules-failure", "Failed")
        assert rule_of(condition(failed_by_master, "Failed")["message"]) == {"master": [0]}

    # The service example: a Service per replica, named like it, on port 2222.
    async def replica_services() -> None:
        await guide.phase("service", "Running")
        made = json.loads((await guide.kubectl.ok("get", "service", f"{JOB}-worker-0", "-n", "service",
                                                     "-o", "json")).out)
        assert [(p["name"], p["port"]) for p in made["spec"]["ports"]] == [("http", 2222)]

    # T9k Scheduler: the pods go to it, in a PodGroup of the whole job in queue default with priority 50.
    async def scheduler() -> None:
        pods = await guide.pods("scheduler", 4)
        assert {p["spec"]["schedulerName"] for p in pods} == {"t9k-scheduler"}
        groups = json.loads((await guide.kubectl.ok("get", "podgroups", "-n", "scheduler", "-o", "json")).out)["items"]
        assert [g["spec"] for g in groups] == [{"minMember": 4, "queue": "default", "priority": 50}]

    # Debug mode: the environment is deployed, the training does not start. A debug pod that ends is replaced as
    # it was, after the restart back-off, and counts nothing (on a machine without /usr/bin/sshd, the first
    # example's pods fail to start, so they come and go: what they ran is in the kubelet's Warning Events).
    async def debug_mode() -> None:
        commands, warnings = await guide.debug_attempts("debug-one", 4)
        assert commands <= {'["/usr/bin/sshd"]'} and (commands or any("/usr/bin/sshd" in w for w in warnings)), warnings
        assert {json.dumps(c["command"]) for c in containers(await guide.pods("debug-two", 4))} == {'["sleep", "inf"]'}
        assert (await guide.job("debug-two"))["status"]["phase"] == "Running"
        for namespace in ("debug-one", "debug-two"):
            debugging = (await guide.job(namespace))["status"]
            assert debugging["phase"] not in ("Succeeded", "Failed") and debugging.get("backoffCount", 0) == 0, \
                debugging

    # Pause mode: no replica until resumed; then the resume settings' command, or the template's.
    async def pause_mode() -> None:
        for namespace, command in (("pause-one", ["/usr/bin/sshd"]), ("pause-two", ["sleep", "365"])):
            paused = await guide.phase(namespace, "Paused")
            assert condition(paused, "Paused")["status"] == "True"
            assert json.loads((await guide.kubectl.ok("get", "pods", "-n", namespace, "-o", "json")).out)["items"] == []
            await guide.resume(namespace)
            assert [c["command"] for c in containers(await guide.pods(namespace, 4))] == [command] * 4

    await asyncio.gather(first_example(), passed_through(), variables(), rule_outcomes(), replica_services(),
                         scheduler(), debug_mode(), pause_mode())


def _the_status_reads_as_the_guides(failed: dict) -> None:
    """The guide's three status examples, against the first example's job failed by its rule on worker 0."""
    [conditions] = documents("11-status-conditions.yaml")
    [tasks] = documents("12-status-tasks.yaml")
    [aggregate] = documents("13-status-aggregate.yaml")
    status = failed["status"]
    assert status["phase"] == conditions["status"]["phase"] == "Failed"
    for shown in conditions["status"]["conditions"]:
        real = condition(failed, GUIDE_SPELLINGS.get(shown["type"], shown["type"]))
        if shown["type"] in ("Completed", "Failed"):  # the outcome; the others tell how the job ran
            assert real["status"] == shown["status"]
            assert rule_of(real["message"]) == rule_of(shown["message"]) == {"worker": [0]}
        assert set(shown) <= set(real)
    [shown_task] = tasks["status"]["tasks"]
    [task] = status["tasks"]
    assert set(shown_task) - {"status"} <= set(task) and task["type"] == shown_task["type"]
    records = task[GUIDE_SPELLINGS["status"]]
    assert all(set(shown_task["status"][0]) <= set(record) for record in records)
    assert [r["name"] for r in records] == [f"{JOB}-worker-{rank}" for rank in range(4)]
    assert set(status["aggregate"]) == set(aggregate["status"]["aggregate"])
    assert sum(status["aggregate"].values()) == 4
