"""`genericjob-controller local --apply` says why a replica failed or waits, in its progress and its summary.

Run as a user runs it (a subprocess); the pod pieces in-process.
"""

from __future__ import annotations

import re

from controller.devtools.reasons import pod_reason

from .test_local import progress, run_local, write


def job(name: str, container: str, replicas: int = 1, volumes: str = "", rules: str = "") -> str:
    return (f"apiVersion: batch.tensorstack.dev/v1beta1\nkind: GenericJob\nmetadata: {{name: {name}}}\nspec:\n"
            f"{rules}  replicaSpecs:\n  - type: worker\n    replicas: {replicas}\n"
            f"    template: {{spec: {{containers: [{container}]{volumes}}}}}\n")


def summary_of(stdout: str) -> str:
    starts = [stdout.find(marker) for marker in ("finished in", "timed out after") if marker in stdout]
    return stdout[min(starts):]


def test_a_binary_that_does_not_exist_is_named_with_its_exit_code(tmp_path):
    manifest = write(tmp_path, "missing.yaml", job("missing", "{name: main, image: x, command: [nonexistent-binary]}"))
    done = run_local(tmp_path, "--apply", str(manifest))
    assert done.returncode == 1, done.stdout + done.stderr
    why = 'worker-0 Failed (StartError: exec: "nonexistent-binary": executable file not found in $PATH, exit 128)'
    assert progress(done.stdout, "missing")[-1] == ("Failed", why)
    assert f"\n    {why}\n" in summary_of(done.stdout)


def test_a_replica_waiting_for_a_secret_says_so_until_the_timeout(tmp_path):
    env = "env: [{name: TOKEN, valueFrom: {secretKeyRef: {name: x, key: token}}}]"
    manifest = write(tmp_path, "secret.yaml", "---\n".join([
        job("needs-env", f"{{name: main, image: x, command: [sh, -c, 'exit 0'], {env}}}"),
        job("needs-volume", "{name: main, image: x, command: [sh, -c, 'exit 0']}", replicas=2,
            volumes=", volumes: [{name: creds, secret: {secretName: vault}}]"),
    ]))
    done = run_local(tmp_path, "--timeout", "3", "--apply", str(manifest))
    assert done.returncode == 2, done.stdout + done.stderr
    waits = 'worker-0 Pending (CreateContainerConfigError: secret "x" not found)'
    assert ("Pending", waits) in progress(done.stdout, "needs-env")
    mount = 'Pending (FailedMount: MountVolume.SetUp failed for volume "creds" : secret "vault" not found)'
    assert ("Pending", f"worker-0 {mount}, worker-1 {mount}") in progress(done.stdout, "needs-volume")
    summary = summary_of(done.stdout)
    assert re.search(rf"needs-env     Pending    \S+s\n    {re.escape(waits)}\n", summary), summary
    assert f"    worker-0 {mount}\n    worker-1 {mount}\n" in summary


def test_many_failed_replicas_are_explained_up_to_five(tmp_path):
    every = f"  failureRules: [{{worker: {list(range(9))}}}]\n"  # the job fails once all nine have
    manifest = write(tmp_path, "many.yaml", job("many", "{name: main, image: x, command: [sh, -c, 'exit 4']}",
                                                 replicas=9, rules=every))
    done = run_local(tmp_path, "--apply", str(manifest))
    assert done.returncode == 1, done.stdout + done.stderr
    summary = summary_of(done.stdout)
    explained = re.findall(r"^    worker-\d Failed \(exit 4\)$", summary, re.MULTILINE)
    assert len(explained) == 5 and "\n    and 4 more\n" in summary, summary


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
