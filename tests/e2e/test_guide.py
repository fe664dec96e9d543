"""Every example of the user guide (spec/004), end to end, as written there (with the image,
container name and pod script a runnable job needs)."""

from __future__ import annotations

import json

from tests.builders import JobBuilder

from .conftest import FAIL, FOREVER, QUICK, condition, genericjob, phase, replicas, scripts, task

SLEEP = {"command": ["sleep", "365"], "image": "nginx:latest", "name": "sleep"}


def guide_job(name: str, containers: list[dict], replicas_count: int = 4, volumes=None, **spec) -> dict:
    pod_spec: dict = {"containers": containers}
    if volumes is not None:
        pod_spec["volumes"] = volumes
    return JobBuilder(name).spec(**spec).replica("worker", replicas_count, template={"spec": pod_spec}).obj()


def basic(name: str = "generic-example") -> dict:
    """The first example: 4 workers, success when worker 0 succeeds, failure when worker 0 or 1 fails."""
    return guide_job(name, [SLEEP], successRules=[{"worker": [0]}],
                     failureRules=[{"worker": [0]}, {"worker": [1]}])


async def test_basic_example_makes_four_workers_running_sleep(cluster, controller, jobs):
    await jobs.submit(basic())
    running = await jobs.wait_phase("generic-example", "Running")
    pods = await jobs.pods("generic-example")
    assert [p.metadata.name for p in pods] == [f"generic-example-worker-{rank}" for rank in range(4)]
    for rank, pod in enumerate(pods):
        assert pod.spec.containers[0].command == ["sleep", "365"]
        assert pod.spec.containers[0].image == "nginx:latest"
        assert pod.spec.restart_policy == "Never"
        labels = pod.metadata.labels
        assert labels["genericjob.batch.tensorstack.dev/name"] == "generic-example"
        assert labels["genericjob.batch.tensorstack.dev/replica-type"] == "worker"
        assert labels["genericjob.batch.tensorstack.dev/rank"] == str(rank)
        assert labels["genericjob.batch.tensorstack.dev/uid"] == running["metadata"]["uid"]
        [owner] = pod.metadata.owner_references
        assert (owner.kind, owner.name, owner.uid, owner.controller, owner.block_owner_deletion) == (
            "GenericJob", "generic-example", running["metadata"]["uid"], True, True)


async def test_basic_example_succeeds_with_worker_0(cluster, controller, jobs):
    scripts(cluster, "generic-example", {"worker-0": QUICK, "worker-*": FOREVER})
    await jobs.submit(basic())
    done = await jobs.wait_phase("generic-example", "Succeeded")
    assert condition(done, "Completed")["status"] == "True"
    assert condition(done, "Completed")["message"] == 'The job is succeeded with rule: {"worker": [0]}'
    assert condition(done, "Failed")["status"] == "False"


async def test_basic_example_fails_with_worker_1(cluster, controller, jobs):
    scripts(cluster, "generic-example", {"worker-1": FAIL, "worker-*": FOREVER})
    await jobs.submit(basic())
    done = await jobs.wait_phase("generic-example", "Failed")
    assert condition(done, "Failed")["status"] == "True"
    assert condition(done, "Failed")["message"] == ('The job is failed with rule: {"worker": [1]}: replica worker-1 '
                                                    "failed with exit code 1 (Error) "
                                                    "under restart policy OnFailure with limit 0 (no restarts)")
    assert condition(done, "Completed")["status"] == "False"


async def test_basic_example_ignores_failure_of_worker_outside_the_rules(cluster, controller, jobs):
    scripts(cluster, "generic-example", {"worker-2": FAIL, "worker-*": FOREVER})
    await jobs.submit(basic())
    seen = await jobs.wait_replica("generic-example", "generic-example-worker-2", lambda r: r["phase"] == "Failed")
    assert phase(seen) == "Running"
    assert condition(seen, "ReplicaFailure")["status"] == "True"
    await jobs.core.delete_namespaced_pod("generic-example-worker-0", "default")
    # A pod deleted by hand under OnFailure limit 0 has failed for good: rule {"worker": [0]} fails it.
    done = await jobs.wait_phase("generic-example", "Failed")
    assert condition(done, "Failed")["message"] == (
        'The job is failed with rule: {"worker": [0]}: replica worker-0 failed without an exit code '
        "(its pod was lost: deleted, or its node gone) under restart policy OnFailure with limit 0 (no restarts)")


async def test_resources_example_passes_requests_and_limits_through(cluster, controller, jobs):
    container = {**SLEEP, "resources": {"limits": {"cpu": 4, "memory": "4Gi"},
                                        "requests": {"cpu": 2, "memory": "2Gi"}}}
    await jobs.submit(guide_job("generic-example", [container]))
    pods = await jobs.wait_pods("generic-example", lambda pods: len(pods) == 4)
    for pod in pods:
        resources = pod.spec.containers[0].resources
        assert str(resources.limits["cpu"]) == "4" and resources.limits["memory"] == "4Gi"
        assert str(resources.requests["cpu"]) == "2" and resources.requests["memory"] == "2Gi"


async def test_shared_memory_example_passes_volumes_through(cluster, controller, jobs):
    container = {**SLEEP, "volumeMounts": [{"mountPath": "/dev/shm", "name": "dshm"}]}
    volumes = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}]
    await jobs.submit(guide_job("generic-example", [container], volumes=volumes))
    pods = await jobs.wait_pods("generic-example", lambda pods: len(pods) == 4)
    for pod in pods:
        # and, as on a real cluster, the ServiceAccount admission plugin's token volume after the template's
        mount, token_mount = pod.spec.containers[0].volume_mounts
        assert (mount.mount_path, mount.name) == ("/dev/shm", "dshm")
        volume, token = pod.spec.volumes
        assert (volume.name, volume.empty_dir.medium, volume.empty_dir.size_limit) == ("dshm", "Memory", "1Gi")
        assert token.name.startswith("kube-api-access-") and token_mount.name == token.name
        assert token_mount.mount_path == "/var/run/secrets/kubernetes.io/serviceaccount"


async def test_env_example_sets_direct_values_and_passes_secret_references_untouched(cluster, controller, jobs):
    env = [{"name": "ENV_DIRECT", "value": "env-value"},
           {"name": "ENV_REFERENCED", "valueFrom": {"secretKeyRef": {"name": "secret-name", "key": "key-in-secret"}}}]
    await jobs.submit(guide_job("generic-example", [{**SLEEP, "env": env}]))
    pods = await jobs.wait_pods("generic-example", lambda pods: len(pods) == 4)
    for pod in pods:
        raw = await jobs.core.api_client.call_api(
            f"/api/v1/namespaces/default/pods/{pod.metadata.name}", "GET", _preload_content=False,
            auth_settings=["BearerToken"], response_types_map={})
        body = json.loads(await raw.read())
        assert body["spec"]["containers"][0]["env"] == env


async def test_variable_substitution_in_command_args_and_env(cluster, controller, jobs):
    container = {
        **SLEEP,
        "command": ["run", "$(type)", "$(rank)", "$(replicas[worker])", "$(replicas[ps])"],
        "args": ["--peer=$(service.ps[0].host):$(service.port[http])", "--home=$(HOME)", "$$(rank)"],
        "env": [{"name": "WHO", "value": "$(type)-$(rank)-of-$(replicas[worker])"},
                {"name": "PEER", "value": "$(service.worker[1].host)"},
                {"name": "KUBELET", "value": "$(PATH)"}],
    }
    init = {"name": "init", "image": "busybox:1.36", "command": ["echo", "$(type)", "$(rank)"],
            "args": ["$(replicas[ps])"], "env": [{"name": "RANK", "value": "$(rank)"}]}
    job = (JobBuilder("subst").spec(service={"ports": [{"name": "http", "port": 2222}]})
           .replica("worker", 2, template={"spec": {"initContainers": [init], "containers": [container]}})
           .replica("ps", 1, template={"spec": {"containers": [SLEEP]}}).obj())
    await jobs.submit(job)
    pods = await jobs.wait_pods("subst", lambda pods: len(pods) == 3)
    workers = [p for p in pods if p.metadata.labels["genericjob.batch.tensorstack.dev/replica-type"] == "worker"]
    for rank, pod in enumerate(workers):
        main = pod.spec.containers[0]
        assert main.command == ["run", "worker", str(rank), "2", "1"]
        assert main.args == ["--peer=subst-ps-0:2222", "--home=$(HOME)", "$$(rank)"]
        assert [(e.name, e.value) for e in main.env] == [
            ("WHO", f"worker-{rank}-of-2"), ("PEER", "subst-worker-1"), ("KUBELET", "$(PATH)")]
        first = pod.spec.init_containers[0]
        assert first.command == ["echo", "worker", str(rank)]
        assert first.args == ["1"]
        assert first.env[0].value == str(rank)


def tf_config_job(name: str = "generic-example", service: bool = True) -> dict:
    value = ('{"task":{"type":"$(type)","index":$(rank)},"cluster":{"worker":["$(service.worker[0].host):'
             '$(service.port[http])","$(service.worker[1].host):$(service.port[http])","$(service.worker[2].host):'
             '$(service.port[http])","$(service.worker[3].host):$(service.port[http])"]}}')
    container = {"command": ["python", "/mnt/training.py"], "image": "tensorflow/tensorflow:2.11.0",
                 "name": "tensorflow", "env": [{"name": "TF_CONFIG", "value": value}]}
    extra = {"service": {"ports": [{"name": "http", "port": 2222}]}} if service else {}
    return guide_job(name, [container], **extra)


async def test_tf_config_example_gives_each_worker_its_exact_config(cluster, controller, jobs):
    # The example names $(service.port[http]): it runs with the service example's port "http".
    await jobs.submit(tf_config_job())
    pods = await jobs.wait_pods("generic-example", lambda pods: len(pods) == 4)
    cluster_part = ('"cluster":{"worker":["generic-example-worker-0:2222","generic-example-worker-1:2222",'
                    '"generic-example-worker-2:2222","generic-example-worker-3:2222"]}}')
    expected = ['{"task":{"type":"worker","index":0},' + cluster_part,
                '{"task":{"type":"worker","index":1},' + cluster_part,
                '{"task":{"type":"worker","index":2},' + cluster_part,
                '{"task":{"type":"worker","index":3},' + cluster_part]
    assert [p.metadata.name for p in pods] == [f"generic-example-worker-{rank}" for rank in range(4)]
    for pod, wanted in zip(pods, expected, strict=True):
        [env] = pod.spec.containers[0].env
        assert (env.name, env.value) == ("TF_CONFIG", wanted)
        json.loads(env.value)  # and it is JSON


async def test_tf_config_example_without_service_is_invalid(cluster, controller, jobs):
    await jobs.submit(tf_config_job(service=False))
    done = await jobs.wait_phase("generic-example", "Failed")
    failed = condition(done, "Failed")
    assert failed["reason"] == "InvalidSpec"
    assert "spec.replicaSpecs[0].template.spec.containers[0].env[0].value" in failed["message"]
    assert "spec.service" in failed["message"]
    assert await jobs.pods("generic-example") == []


async def test_restart_policies_per_type(cluster, controller, jobs):
    """The guide: different types may use different policies, e.g. master Always, worker OnFailure."""
    job = genericjob("mixed", {"master": 1, "worker": 1},
                     script={"master": [QUICK, QUICK, FOREVER], "worker": [FAIL, QUICK]},
                     restart={"master": {"policy": "Always", "limit": 2},
                              "worker": {"policy": "OnFailure", "limit": 3}},
                     successRules=[{"master": [0], "worker": [0]}])
    await jobs.submit(job)
    seen = await jobs.wait("mixed", lambda j: replicas(j).get("mixed-master-0", {}).get("phase") == "Running"
                           and task(j, "master").get("restartCount") == 2
                           and replicas(j).get("mixed-worker-0", {}).get("phase") == "Succeeded")
    assert task(seen, "worker")["restartCount"] == 1
    assert seen["status"]["backoffCount"] == 3
    assert phase(seen) == "Running"


async def test_service_example_exposes_each_replica(cluster, controller, jobs):
    job = guide_job("generic-example", [SLEEP], replicas_count=1,
                    service={"ports": [{"name": "http", "port": 2222}]})
    await jobs.submit(job)
    await jobs.wait_phase("generic-example", "Running")
    [service] = await jobs.services("generic-example")
    assert service.metadata.name == "generic-example-worker-0"
    assert [(p.name, p.port) for p in service.spec.ports] == [("http", 2222)]


async def test_scheduler_example_uses_t9k_scheduler(cluster, controller, jobs):
    job = guide_job("generic-example", [SLEEP], scheduler={"t9kScheduler": {"queue": "default", "priority": 50}})
    await jobs.submit(job)
    pods = await jobs.wait_pods("generic-example", lambda pods: len(pods) == 4)
    assert {p.spec.scheduler_name for p in pods} == {"t9k-scheduler"}
    [group] = await jobs.podgroups()
    assert group["spec"] == {"minMember": 4, "queue": "default", "priority": 50}


async def test_default_scheduler_without_scheduler_field(cluster, controller, jobs):
    await jobs.submit(basic())
    pods = await jobs.wait_pods("generic-example", lambda pods: len(pods) == 4)
    assert {p.spec.scheduler_name for p in pods} <= {None, "default-scheduler"}
    assert await jobs.podgroups() == []


def with_init(job: dict) -> dict:
    job["spec"]["replicaSpecs"][0]["template"]["spec"]["initContainers"] = [
        {"name": "prepare", "image": "busybox:1.36", "command": ["true"]}]
    job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["args"] = ["--flag"]
    return job


async def test_debug_example_one_runs_sshd_without_init_containers(cluster, controller, jobs):
    job = with_init(guide_job("generic-example", [SLEEP], runMode={"debug": {
        "enabled": True,
        "replicaSpecs": [{"type": "worker", "skipInitContainer": True, "command": ["/usr/bin/sshd"]}]}}))
    await jobs.submit(job)
    await jobs.wait_phase("generic-example", "Running")
    pods = await jobs.pods("generic-example")
    assert len(pods) == 4
    for pod in pods:
        assert pod.spec.containers[0].command == ["/usr/bin/sshd"]
        assert pod.spec.containers[0].args is None
        assert pod.spec.init_containers is None


async def test_debug_example_two_sleeps_and_keeps_init_containers(cluster, controller, jobs):
    job = with_init(guide_job("generic-example", [SLEEP], runMode={"debug": {"enabled": True}}))
    await jobs.submit(job)
    await jobs.wait_phase("generic-example", "Running")
    for pod in await jobs.pods("generic-example"):
        assert pod.spec.containers[0].command == ["sleep", "inf"]
        assert pod.spec.containers[0].args is None
        assert [c.name for c in pod.spec.init_containers] == ["prepare"]


async def test_pause_example_one_creates_nothing_then_resumes_with_sshd(cluster, controller, jobs):
    job = with_init(guide_job("generic-example", [SLEEP], runMode={"pause": {
        "enabled": True,
        "resumeSpecs": [{"type": "worker", "skipInitContainer": True, "command": ["/usr/bin/sshd"]}]}}))
    await jobs.submit(job)
    paused = await jobs.wait_phase("generic-example", "Paused")
    assert condition(paused, "Paused")["status"] == "True"
    assert await jobs.pods("generic-example") == []
    await jobs.patch("generic-example", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    await jobs.wait_phase("generic-example", "Running")
    pods = await jobs.pods("generic-example")
    assert len(pods) == 4
    for pod in pods:
        assert pod.spec.containers[0].command == ["/usr/bin/sshd"]
        assert pod.spec.containers[0].args == ["--flag"]  # resumeSpecs without args keep the template's
        assert pod.spec.init_containers is None


async def test_pause_example_two_resumes_with_the_template(cluster, controller, jobs):
    job = with_init(guide_job("generic-example", [SLEEP], runMode={"pause": {"enabled": True}}))
    await jobs.submit(job)
    await jobs.wait_phase("generic-example", "Paused")
    assert await jobs.pods("generic-example") == []
    await jobs.patch("generic-example", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    await jobs.wait_phase("generic-example", "Running")
    for pod in await jobs.pods("generic-example"):
        assert pod.spec.containers[0].command == ["sleep", "365"]
        assert pod.spec.containers[0].args == ["--flag"]
        assert [c.name for c in pod.spec.init_containers] == ["prepare"]
