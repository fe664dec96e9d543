"""ssh between pods of the process runner (kubelet/remote_shell.py): a container whose command is `sshd` runs the
stand-in, and `ssh HOST COMMAND` from another pod runs the command in that container's environment, at its
address, with the caller's stdin and stdout, its exit code the caller's; a pod that runs no sshd refuses. And what
the podnet shim shows Open MPI of the machine's interfaces: the pod's address."""

from __future__ import annotations

import pytest

from localcluster.kubelet.stand_ins import ssh

from .process_runner_support import log_text, process_pod, python, wait_phase, wait_pod

pytestmark = pytest.mark.runner("process")

# The address of every interface that is not the loopback, as Open MPI asks for it (SIOCGIFADDR).
INTERFACES = r"""
import fcntl, socket, struct
s = socket.socket()
for _, name in socket.if_nameindex():
    if name == "lo":
        continue
    try:
        found = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))
    except OSError:
        continue  # no IPv4 address
    print(name, socket.inet_ntoa(found[20:24]))
"""


def running(pod) -> bool:
    return pod.status.phase == "Running" and bool(pod.status.pod_ip)


async def test_ssh_runs_the_command_in_the_pod_of_the_sshd_stand_in(cluster, core, network):
    worker = process_pod("worker", "/usr/sbin/sshd", "-D", env=[{"name": "ROLE", "value": "worker"}])
    await core.create_namespaced_pod("default", worker)
    address = (await wait_pod(core, "worker", running)).status.pod_ip
    command = (f"echo hello | ssh -x -o ConnectionAttempts=10 root@{address} 'read line; echo $line from $ROLE "
               "$HOSTNAME $LOCALCLUSTER_POD_IP; exit 3'; echo exit $?")
    await core.create_namespaced_pod("default", process_pod("launcher", "sh", "-c", command))
    done = await wait_phase(core, "launcher", "Succeeded", "Failed", timeout=20)
    assert await log_text(core, "launcher") == f"hello from worker worker {address}\nexit 3\n", done.status
    assert "stand-in" in await log_text(core, "worker")  # the sshd stand-in says what it is
    assert (await core.read_namespaced_pod("worker", "default")).status.phase == "Running"


async def test_a_pod_without_sshd_refuses(cluster, core, network):
    await core.create_namespaced_pod("default", process_pod("quiet", *python("import time; time.sleep(60)")))
    address = (await wait_pod(core, "quiet", running)).status.pod_ip
    await core.create_namespaced_pod("default", process_pod("caller", "sh", "-c", f"ssh {address} true; echo $?"))
    await wait_phase(core, "caller", "Succeeded", timeout=20)
    out = await log_text(core, "caller")
    assert out.endswith("255\n") and f"ssh: connect to host {address} port 22: Connection refused" in out, out


async def test_the_machines_interfaces_show_the_pods_address(cluster, core, network):
    await core.create_namespaced_pod("default", process_pod("ifaces", *python(INTERFACES)))
    done = await wait_phase(core, "ifaces", "Succeeded", "Failed")
    out = await log_text(core, "ifaces")
    assert done.status.phase == "Succeeded", out
    assert all(line.split()[1] == done.status.pod_ip for line in out.splitlines()), out


@pytest.mark.parametrize(("argv", "parsed"), [
    (["-x", "-o", "ConnectionAttempts=10", "-p", "22", "root@w0.j.ns.svc", "orted", "-mca", "ess", '"env"'],
     ("w0.j.ns.svc", 'orted -mca ess "env"', 10)),
    (["-oConnectionAttempts=3", "-lroot", "-T", "host", "true"], ("host", "true", 3)),
    (["-q", "--", "host"], ("host", "", 1)),
    (["-V"], (None, "", 1))])
def test_the_ssh_stand_in_reads_sshs_arguments(argv, parsed):
    assert ssh.parse(argv) == parsed
