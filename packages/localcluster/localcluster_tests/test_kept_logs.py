"""Pods' output kept after the pods are gone (kept_logs.py, what `local` asks for): a pod deleted while it runs,
a pod replaced by another of its name, a container restarted in place, and pods still running when the cluster
stops. `kubectl logs` of a pod deleted still answers NotFound, as a real server does: the files are the way."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from localcluster import LocalCluster
from localcluster.kubelet import kept_logs
from localcluster.testing import Kubectl, until

from .process_runner_support import log_contains, process_pod, wait_phase
from .test_delete import gone

pytestmark = pytest.mark.runner("process")


def kept(directory, pod: str, container: str = "main", namespace: str = "default") -> str:
    path = kept_logs.file_for(directory, namespace, pod, container)
    return path.read_text() if path.exists() else ""


def header(pod: str, uid: str, note: str = "", container: str = "main") -> str:
    return f"==> pod default/{pod} (uid {uid}), container {container}{note} <==\n"


async def test_a_pod_deleted_while_it_runs_keeps_its_output_and_kubectl_logs_says_not_found(cluster, core, tmp_path):
    directory = cluster.runner.keep_logs(tmp_path / "kept")
    created = await core.create_namespaced_pod("default", process_pod(
        "master", "sh", "-c", "echo waiting for worker 1; echo no newline at the end >&2; printf tail; exec sleep 60"))
    await log_contains(core, "master", "tail")
    assert kept(directory, "master") == ""  # kept as the pod goes; until then, `kubectl logs` serves it
    await core.delete_namespaced_pod("master", "default")
    await until(lambda: gone(core, "master"))
    assert kept(directory, "master") == (header("master", created.metadata.uid) + "waiting for worker 1\n"
                                         "no newline at the end\ntail\n")
    with pytest.raises(ApiException) as err:
        await core.read_namespaced_pod_log("master", "default")
    assert err.value.status == 404
    answer = await Kubectl(cluster, tmp_path).run("logs", "master")
    assert (answer.code, answer.err) == (1, 'error: error from server (NotFound): pods "master" not found in namespace '
                                            '"default"\n')  # kubectl's words for a pod that is not there


async def test_each_pod_of_a_name_adds_its_output_in_turn(cluster, core, tmp_path):
    """The controller replaces a replica's pod by one of the same name: every attempt's output is kept, in order."""
    directory = cluster.runner.keep_logs(tmp_path / "kept")
    uids = []
    for attempt in ("one", "two"):
        body = process_pod("replica", "sh", "-c", f"echo attempt {attempt}; exit 1")
        body["spec"]["initContainers"] = [{"name": "prep", "image": "x", "command": ["echo", f"prep {attempt}"]}]
        uids.append((await core.create_namespaced_pod("default", body)).metadata.uid)
        await wait_phase(core, "replica", "Failed")
        await core.delete_namespaced_pod("replica", "default")
        await until(lambda: gone(core, "replica"))
    assert kept(directory, "replica") == "".join(header("replica", uid) + f"attempt {attempt}\n"
                                                 for uid, attempt in zip(uids, ("one", "two"), strict=True))
    assert kept(directory, "replica", "prep") == "".join(header("replica", uid, container="prep") + f"prep {a}\n"
                                                         for uid, a in zip(uids, ("one", "two"), strict=True))


async def test_a_container_restarted_in_place_keeps_both_instances(cluster, core, tmp_path):
    cluster.runner.backoff = (0.05, 0.1)
    directory = cluster.runner.keep_logs(tmp_path / "kept")
    marker = tmp_path / "tried"
    script = f"if [ -e {marker} ]; then echo second try; exit 0; fi; echo first try; touch {marker}; exit 1"
    created = await core.create_namespaced_pod("default", process_pod("flaky", "sh", "-c", script,
                                                                      restart="OnFailure"))
    await wait_phase(core, "flaky", "Succeeded")
    await core.delete_namespaced_pod("flaky", "default")
    await until(lambda: gone(core, "flaky"))
    uid = created.metadata.uid
    assert kept(directory, "flaky") == (header("flaky", uid, ", the instance before its last restart") + "first try\n"
                                        + header("flaky", uid) + "second try\n")


@pytest.mark.slow  # clusters with the process runner
async def test_pods_still_running_when_the_cluster_stops_are_kept_and_the_next_keeper_starts_empty(tmp_path):
    directory = tmp_path / "kept"
    async with LocalCluster(runner="process") as running:
        running.runner.keep_logs(directory)
        configuration = client.Configuration()
        await config.load_kube_config_from_dict(running.kubeconfig(), client_configuration=configuration)
        async with client.ApiClient(configuration) as api:
            core = client.CoreV1Api(api)
            await core.create_namespaced_pod("default", process_pod("worker", "sh", "-c",
                                                                    "echo epoch 1; exec sleep 60"))
            await log_contains(core, "worker", "epoch 1")
    assert kept(directory, "worker").endswith("), container main <==\nepoch 1\n")  # stopped: kept, not removed
    async with LocalCluster(runner="process") as again:
        again.runner.keep_logs(directory)  # the same place: the earlier run's files are that run's
        assert list(directory.iterdir()) == []
