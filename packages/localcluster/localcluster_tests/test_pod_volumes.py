"""ConfigMap and Secret volumes under the process runner (kubelet/pod_volumes.py): their files written in the run's
own directory, their mount paths rewritten in the container's env, command and args, and the files following
their object as it changes; never this machine's own /etc."""

from __future__ import annotations

import base64
import os

import pytest

from localcluster.kubelet.pod_volumes import PodVolumes

from .process_runner_support import log_contains, log_text, process_pod, python, wait_phase

pytestmark = pytest.mark.runner("process")

MOUNT = "/etc/localcluster-test-volume"

# Reads the file its env and its argv name until it says `two` (the ConfigMap's second value), printing each value.
FOLLOW = r"""
import os, sys, time
path = os.environ["HOSTFILE"]
assert path == sys.argv[1] and path.endswith("/etc/localcluster-test-volume/hostfile"), (path, sys.argv)
assert "--hostfile=" + path == sys.argv[2], sys.argv
seen = None
deadline = time.monotonic() + 20
while seen != "two" and time.monotonic() < deadline:
    text = open(path).read()
    if text != seen:
        print("read", text, flush=True)
        seen = text
    time.sleep(0.05)
sys.exit(0 if seen == "two" else 1)
"""


def with_volume(pod: dict, volume: dict) -> dict:
    pod["spec"]["volumes"] = [{"name": "v", **volume}]
    pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "v", "mountPath": MOUNT}]
    return pod


async def test_a_configmap_volume_is_read_where_the_env_and_args_say_and_follows_its_object(cluster, core):
    await core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}, "data": {"hostfile": "one"}})
    pod = process_pod("reader", *python(FOLLOW, f"{MOUNT}/hostfile", f"--hostfile={MOUNT}/hostfile"),
                      env=[{"name": "HOSTFILE", "value": f"{MOUNT}/hostfile"}])
    await core.create_namespaced_pod("default", with_volume(pod, {"configMap": {"name": "cm"}}))

    await log_contains(core, "reader", "read one")
    await core.patch_namespaced_config_map("cm", "default", {"data": {"hostfile": "two"}})
    done = await wait_phase(core, "reader", "Succeeded", "Failed", timeout=30)
    assert done.status.phase == "Succeeded", await log_text(core, "reader")
    assert os.path.basename(MOUNT) not in os.listdir("/etc")  # this machine's /etc is never written


async def test_a_secret_volume_has_its_items_and_modes(cluster, core):
    data = {"ssh-privatekey": base64.b64encode(b"secret key").decode(), "other": base64.b64encode(b"x").decode()}
    await core.create_namespaced_secret("default", {"metadata": {"name": "keys"}, "data": data})
    check = ("import os, sys; p = sys.argv[1]; print(sorted(os.listdir(p)), oct(os.stat(p + '/id').st_mode & 0o777),"
             " open(p + '/id').read())")
    pod = process_pod("keys", *python(check, MOUNT))
    volume = {"secret": {"secretName": "keys", "defaultMode": 0o600,
                         "items": [{"key": "ssh-privatekey", "path": "id"}]}}
    await core.create_namespaced_pod("default", with_volume(pod, volume))
    done = await wait_phase(core, "keys", "Succeeded", "Failed")
    assert done.status.phase == "Succeeded", await log_text(core, "keys")
    assert await log_text(core, "keys") == "['id'] 0o600 secret key\n"


def test_mount_paths_are_rewritten_as_whole_paths_only():
    volumes = PodVolumes()
    volumes.start()
    try:
        pod = {"metadata": {"uid": "u"}, "spec": {"volumes": [{"name": "c", "configMap": {"name": "cm"}},
                                                            {"name": "e", "emptyDir": {}}]}}
        container = {"name": "main", "volumeMounts": [{"name": "c", "mountPath": "/etc/mpi"},
                                                      {"name": "e", "mountPath": "/scratch"}]}
        root = volumes.container_root(pod, "main")
        argv, env = volumes.rewrite(pod, container, ["mpirun", "--hostfile", "/etc/mpi/hostfile", "/etc/mpix",
                                                     "/scratch/a"],
                                    {"A": "/etc/mpi/hostfile", "B": "x=/etc/mpi:/etc/mpi2", "C": "/etc/mpi"})
        assert argv == ["mpirun", "--hostfile", f"{root}/etc/mpi/hostfile", "/etc/mpix", "/scratch/a"]
        assert env == {"A": f"{root}/etc/mpi/hostfile", "B": f"x={root}/etc/mpi:/etc/mpi2", "C": f"{root}/etc/mpi"}
    finally:
        volumes.stop()
