"""`genericjob-controller local --apply` says why a replica failed or waits, in its progress and its summary.

Run to its end in the test's process (local_inprocess.py: the console script's entry point), as the pod pieces are.
"""

from __future__ import annotations

import json
import re
import socket

import pytest

from controller.devtools.port_collision import collision, declared_ports
from controller.devtools.reasons import pod_reason
from localcluster.testing import Kubectl

from .local_inprocess import LocalRun, Output, hold_deadline_until, printed
from .test_local import progress, run_in_process, write


def job(name: str, container: str, replicas: int = 1, volumes: str = "", rules: str = "", policy: str = "") -> str:
    return (f"apiVersion: batch.tensorstack.dev/v1beta1\nkind: GenericJob\nmetadata: {{name: {name}}}\nspec:\n"
            f"{rules}  replicaSpecs:\n  - type: worker\n    replicas: {replicas}\n"
            + (f"    {policy}\n" if policy else "")
            + f"    template: {{spec: {{containers: [{container}]{volumes}}}}}\n")


def summary_of(stdout: str) -> str:
    starts = [stdout.find(marker) for marker in ("finished in", "timed out after") if marker in stdout]
    return stdout[min(starts):]


@pytest.mark.slow  # local's pods
def test_a_binary_that_does_not_exist_is_named_with_its_exit_code(tmp_path):
    manifest = write(tmp_path, "missing.yaml", job("missing", "{name: main, image: x, command: [nonexistent-binary]}"))
    done = run_in_process(tmp_path, "--apply", str(manifest))
    assert done.returncode == 1, done.stdout + done.stderr
    why = 'worker-0 Failed (StartError: exec: "nonexistent-binary": executable file not found in $PATH, exit 128)'
    assert progress(done.stdout, "missing")[-1] == ("Failed", why)
    assert f"\n    {why}\n" in summary_of(done.stdout)


@pytest.mark.slow  # local's pods
def test_a_replica_created_as_the_job_fails_ends_as_what_its_pod_did(tmp_path):
    # worker-0 fails at once and fails the job, often before the cache has shown worker-1's pod, which
    # fails too: the last line and the summary say Failed for both, never Deleted or Creating (issue 16).
    manifest = write(tmp_path, "both.yaml", job("both", "{name: main, image: x, command: [nonexistent-binary]}",
                                                 replicas=2))
    done = run_in_process(tmp_path, "--apply", str(manifest))
    assert done.returncode == 1, done.stdout + done.stderr
    why = '(StartError: exec: "nonexistent-binary": executable file not found in $PATH, exit 128)'
    assert progress(done.stdout, "both")[-1] == ("Failed", f"worker-0 Failed {why}, worker-1 Failed {why}")
    assert "Deleted" not in done.stdout and f"\n    worker-1 Failed {why}\n" in summary_of(done.stdout)


@pytest.mark.slow  # local's pods
def test_a_replica_waiting_for_a_secret_says_so_until_the_timeout(tmp_path, monkeypatch):
    """The deadline is held until both jobs' waits are printed (hold_deadline_until): on a loaded machine the pods
    can take longer than the 3 s to be created."""
    env = "env: [{name: TOKEN, valueFrom: {secretKeyRef: {name: x, key: token}}}]"
    manifest = write(tmp_path, "secret.yaml", "---\n".join([
        job("needs-env", f"{{name: main, image: x, command: [sh, -c, 'exit 0'], {env}}}"),
        job("needs-volume", "{name: main, image: x, command: [sh, -c, 'exit 0']}", replicas=2,
            volumes=", volumes: [{name: creds, secret: {secretName: vault}}]"),
    ]))
    waits = 'worker-0 Pending (CreateContainerConfigError: secret "x" not found)'
    mount = 'Pending (FailedMount: MountVolume.SetUp failed for volume "creds" : secret "vault" not found)'
    out = Output()
    both = f"worker-0 {mount}, worker-1 {mount}"
    hold_deadline_until(monkeypatch, lambda: printed(out, rf"  needs-env\s+Pending\s+{re.escape(waits)}$",
                                                     rf"  needs-volume\s+Pending\s+{re.escape(both)}$"))
    done = run_in_process(tmp_path, "--timeout", "3", "--apply", str(manifest), stdout=out)
    assert done.returncode == 2, done.stdout + done.stderr
    assert ("Pending", waits) in progress(done.stdout, "needs-env")
    assert ("Pending", both) in progress(done.stdout, "needs-volume")
    summary = summary_of(done.stdout)
    assert re.search(rf"needs-env     Pending    \S+s\n    {re.escape(waits)}\n", summary), summary
    assert f"    worker-0 {mount}\n    worker-1 {mount}\n" in summary


@pytest.mark.slow  # local's pods
def test_many_failed_replicas_are_explained_up_to_five(tmp_path):
    every = f"  failureRules: [{{worker: {list(range(9))}}}]\n"  # the job fails once all nine have
    manifest = write(tmp_path, "many.yaml", job("many", "{name: main, image: x, command: [sh, -c, 'exit 4']}",
                                                 replicas=9, rules=every))
    done = run_in_process(tmp_path, "--apply", str(manifest))
    assert done.returncode == 1, done.stdout + done.stderr
    summary = summary_of(done.stdout)
    explained = re.findall(r"^    worker-\d Failed \(exit 4\)$", summary, re.MULTILINE)
    assert len(explained) == 5 and "\n    and 4 more\n" in summary, summary


@pytest.mark.slow  # local's pods
async def test_a_pod_deleted_by_kubectl_is_said_deleted_not_by_its_sigterm_exit_code(tmp_path):
    """`kubectl delete pod` of a running replica (issue 42): its SIGTERM's exit code 143 is not why it ended. The
    line says "pod was deleted", the Restarting Event's words, under a policy that replaces it and under one
    that does not (the job fails). (A replica that fails by itself, then is retired, keeps its exit code:
    tests/program/test_local.py's restart example.)"""
    wait = "trap 'exit 143' TERM; while true; do sleep 0.05; done"  # as a program that SIGTERM ends
    manifest = write(tmp_path, "deleted.yaml", "---\n".join([
        job("replaced", f"{{name: main, image: x, command: [sh, -c, \"{wait}\"]}}",
            policy="restartPolicy: {policy: OnFailure, limit: 1}"),
        job("ended", f"{{name: main, image: x, command: [sh, -c, \"{wait}\"]}}"),
    ]))
    async with LocalRun(tmp_path, "--port", "0", "--apply", str(manifest), ready=r"^ready: ") as local:
        kubectl = Kubectl(local.kubeconfig, tmp_path)
        for name in ("replaced", "ended"):
            await local.line(rf"  {name}\s+Running\s+worker-0 Running$")
            await kubectl.ok("delete", "pod", f"{name}-worker-0", "--wait=false")
        await local.line(r"  replaced\s+\w+\s+worker-0 Failed \(pod was deleted, 1 restart\)$")
        await local.line(r"  replaced\s+Running\s+worker-0 Running \(1 restart\)$")
        await local.line(r"  ended\s+Failed\s+worker-0 Failed \(pod was deleted\)$")
        events = await kubectl.ok("get", "events", "--field-selector", "involvedObject.name=replaced", "-o",
                                  "jsonpath={.items[*].message}")
        assert "Restarting replica replaced-worker-0 (restart 1 of 1): pod was deleted" in events.out, events.out
        await kubectl.ok("delete", "pod", "replaced-worker-0", "--wait=false")  # its last restart used: it fails
        await local.line(r"  replaced\s+Failed\s+worker-0 Failed \(pod was deleted, 1 restart\)$")
        await local.line(r"^2 Failed of 2 jobs$")
        assert "    worker-0 Failed (pod was deleted, 1 restart)" in local.lines  # the summary's, for `replaced`
        # No exit code 143 said (not a "143" anywhere: the pod network's random range can be 127.143.0.0/16).
        assert not [line for line in local.lines if re.search(r"\bexit( code)? 143\b", line)], "\n".join(local.lines)


def test_pod_reasons_read_like_kubectl_describe():
    def pod(*statuses: dict, **status) -> dict:
        return {"status": {"containerStatuses": list(statuses), **status}}

    def container(name: str, **state) -> dict:
        return {"name": name, "state": state}

    oom = container("main", terminated={"reason": "OOMKilled", "exitCode": 137})
    assert pod_reason(pod(oom), failed=True) == "OOMKilled, exit 137"
    plain = container("main", terminated={"reason": "Error", "exitCode": 2})
    assert pod_reason(pod(plain), failed=True) == "exit 2"
    said = container("main", terminated={"reason": "Error", "message": "disk full", "exitCode": 1})
    assert pod_reason(pod(said), failed=True) == "Error: disk full, exit 1"
    fine = container("sidecar", terminated={"reason": "Completed", "exitCode": 0})
    assert pod_reason(pod(plain, fine), failed=True) == "main: exit 2"
    evicted = pod(container("main", terminated={"reason": "ContainerStatusUnknown", "exitCode": 137}),
                  reason="Evicted", message="The node was low on resource: memory.")
    assert pod_reason(evicted, failed=True) == "ContainerStatusUnknown, exit 137"  # the containers' say first
    assert pod_reason(pod(reason="Evicted", message="low on memory"), failed=True) == "Evicted: low on memory"
    creating = container("main", waiting={"reason": "ContainerCreating"})
    assert pod_reason(pod(creating), failed=False) == ""
    assert pod_reason(pod(creating), failed=False, warning="FailedMount: x") == "FailedMount: x"
    pulling = container("main", waiting={"reason": "ImagePullBackOff", "message": 'Back-off pulling image "x"'})
    assert pod_reason(pod(pulling), failed=False) == 'ImagePullBackOff: Back-off pulling image "x"'
    assert pod_reason(pod(plain), failed=False) == ""  # a pending replica is explained by waits, not exits


LISTENER = """apiVersion: batch.tensorstack.dev/v1beta1
kind: TensorFlowTrainingJob
metadata: {name: listeners}
spec:
  replicaSpecs:
  - type: worker
    replicas: 2
    template:
      spec:
        hostNetwork: HOST_NETWORK
        containers:
        - name: tensorflow
          image: ignored
          ports: [{name: tfjob-port, containerPort: PORT}]
          command:
          - python3
          - -c
          - |
            import json, os, socket, time
            config = json.loads(os.environ["TF_CONFIG"])
            task = config["task"]
            port = int(config["cluster"][task["type"]][task["index"]].rsplit(":", 1)[1])
            server = socket.socket()
            server.bind(("127.0.0.1", port))  # as every TensorFlow task binds its TF_CONFIG address
            server.listen()
            time.sleep(float(os.environ.get("LISTEN_SECONDS", "30")))
"""


def free_port() -> int:
    with socket.socket() as probe:  # a port free now, so a collision is between the replicas only
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow  # local's pods
def test_replicas_on_the_host_network_listening_on_one_port_are_told_they_collide(tmp_path):
    """Two TensorFlow tasks on one port, on this machine's network (`hostNetwork: true`, as every pod is where
    the pod network cannot be had): the second cannot bind it, and its failure line says why (local runs share
    one network), naming the port."""
    port = free_port()
    manifest = write(tmp_path, "listeners.yaml", LISTENER.replace("PORT", str(port)).replace("HOST_NETWORK", "true"))
    done = run_in_process(tmp_path, "--timeout", "60", "--apply", str(manifest))  # a guard: it fails at once
    assert done.returncode == 1, done.stdout + done.stderr
    why = (f"port {port} is already in use on this machine: local runs share one network, so replicas listening "
           "on the same port collide; exit 1")
    phase, replicas = progress(done.stdout, "listeners")[-1]
    assert phase == "Failed" and re.search(rf"worker-[01] Failed \({re.escape(why)}\)", replicas), done.stdout
    assert f"Failed ({why})" in summary_of(done.stdout)


@pytest.mark.slow  # local's pods
def test_replicas_with_addresses_of_their_own_listen_on_one_port(tmp_path):
    """The same two tasks on the pod network: each binds the port at its own address, and both succeed."""
    manifest = write(tmp_path, "listeners.yaml", LISTENER.replace("PORT", str(free_port()))
                     .replace("HOST_NETWORK", "false").replace('"30"', '"1"'))
    done = run_in_process(tmp_path, "--timeout", "60", "--apply", str(manifest))  # a guard: they end in a second
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_colliding_port_is_the_one_another_pod_declares_and_only_an_address_in_use_counts():
    def pod(uid: str, *ports: int, tf_port: int | None = None) -> dict:
        env = [] if tf_port is None else [{"name": "TF_CONFIG", "value": json.dumps(
            {"cluster": {"worker": ["a:1", f"b:{tf_port}"]}, "task": {"type": "worker", "index": 1}})}]
        return {"metadata": {"uid": uid}, "spec": {"containers": [
            {"name": "main", "ports": [{"containerPort": p} for p in ports], "env": env}]}}

    failed, other = pod("a", 8080, tf_port=2222), pod("b", tf_port=2222)
    assert declared_ports(failed) == [8080, 2222]
    in_use = "OSError: [Errno 98] Address already in use"
    assert collision(failed, in_use, [failed, other]).startswith("port 2222 is already in use on this machine: ")
    assert collision(failed, in_use, [failed]).startswith("port 8080 is already in use")
    assert collision(pod("c"), in_use, []).startswith("a port it listens on is already in use")
    assert collision(failed, "ValueError: bad learning rate", [failed, other]) == ""
    failed["status"] = {"podIP": "127.40.0.3"}  # an address of its own: only this machine or the pod itself
    assert collision(failed, in_use, [failed, other]) == ("port 2222 is already in use: a program of this machine "
                                                          "listens on it at every address, or another container of "
                                                          "the pod does")
