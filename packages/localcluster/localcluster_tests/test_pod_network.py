"""The process runner's pod network: an address per pod, wildcard listeners on it, names that resolve.

These need what the pod network needs (Linux, a C compiler, nss_wrapper): `make test` installs them
(scripts/install_system_packages.sh); a machine without them fails here, not skips, since CI must have
them. Pods are plain Python: they listen, connect and resolve with the standard library, as a training
framework does (TF_CONFIG's gRPC servers bind every address on one port; PyTorch's store binds `::`).
"""

from __future__ import annotations

import ipaddress
import socket
import sys

import pytest
from kubernetes_asyncio.client import DiscoveryV1Api

from localcluster.kubelet.network import preload
from localcluster.testing import Kubectl, until

from .process_runner_support import process_pod, python, wait_phase

pytestmark = pytest.mark.runner("process")

# Listens on every address (IPv6 `::`, dual stack, as PyTorch's TCPStore does; IPv4 0.0.0.0 with argv[2]
# "4", as TensorFlow's gRPC may) on port 2222, answers each connection with its own address, and connects to
# every peer named in argv[1] (comma-separated), retrying until each answers; exits 0 when it heard from all
# and was heard by all.
ALL_TO_ALL = r"""
import os, socket, sys, threading, time
peers = [p for p in sys.argv[1].split(",") if p]
family = socket.AF_INET if sys.argv[2:] == ["4"] else socket.AF_INET6
server = socket.socket(family, socket.SOCK_STREAM)
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("0.0.0.0" if family == socket.AF_INET else "::", 2222))
server.listen(16)
me = os.environ["POD_IP"]
def serve():
    for _ in peers:
        conn, _ = server.accept()
        conn.sendall(me.encode())
        conn.close()
threading.Thread(target=serve, daemon=True).start()
heard = {}
deadline = time.monotonic() + 30
for peer in peers:
    while True:
        try:
            with socket.create_connection((peer, 2222), timeout=2) as conn:
                heard[peer] = conn.recv(64).decode()
                break
        except OSError as exc:
            if time.monotonic() > deadline:
                sys.exit(f"cannot reach {peer}: {exc}")
            time.sleep(0.1)
print("heard", sorted(heard.items()), flush=True)
time.sleep(1)  # peers still connecting to us find us here
"""


def pod_ip_env() -> list[dict]:
    return [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]


def headless(name: str, selector: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"clusterIP": "None", "selector": selector, "publishNotReadyAddresses": True,
                     "ports": [{"port": 2222}]}}


async def test_every_pod_gets_an_address_of_its_own_in_its_status(cluster, core, network):
    for name in ("a", "b"):
        await core.create_namespaced_pod("default", process_pod(name, *python("import time; time.sleep(30)")))
    pods = [await wait_phase(core, name, "Running") for name in ("a", "b")]
    ips = [p.status.pod_ip for p in pods]
    assert len(set(ips)) == 2 and all(ipaddress.ip_address(ip) in ipaddress.ip_network(network.pool.network)
                                      for ip in ips), ips
    assert [p.status.pod_ips[0].ip for p in pods] == ips
    assert all(p.status.host_ip == "127.0.0.1" for p in pods)


async def test_kubectl_get_pods_wide_shows_each_pod_s_address(cluster, core, network, tmp_path):
    for name in ("a", "b"):
        await core.create_namespaced_pod("default", process_pod(name, *python("import time; time.sleep(30)")))
    ips = {name: (await wait_phase(core, name, "Running")).status.pod_ip for name in ("a", "b")}
    table = (await Kubectl(cluster, tmp_path).ok("get", "pods", "-o", "wide")).table()
    assert {name: row["IP"] for name, row in table.items()} == ips
    assert {row["NODE"] for row in table.values()} == {"localnode"}


async def test_a_headless_service_s_endpoints_show_its_pods_own_addresses(cluster, core, network, api_client):
    await core.create_namespaced_service("default", headless("grp", {"app": "grp"}))
    for name in ("m0", "m1"):
        await core.create_namespaced_pod("default", process_pod(name, *python("import time; time.sleep(30)"),
                                                                labels={"app": "grp"}))
    ips = sorted([(await wait_phase(core, name, "Running")).status.pod_ip for name in ("m0", "m1")])

    async def endpoints():
        subsets = (await core.read_namespaced_endpoints("grp", "default")).subsets or []
        found = sorted(a.ip for subset in subsets for a in subset.addresses or ())
        return found if found == ips else None

    await until(endpoints)
    slices = (await DiscoveryV1Api(api_client).list_namespaced_endpoint_slice(
        "default", label_selector="kubernetes.io/service-name=grp")).items
    assert sorted(a for sl in slices for ep in sl.endpoints or () for a in ep.addresses) == ips


async def test_kubectl_exec_runs_on_the_pod_s_network(cluster, core, network, tmp_path):
    """What `kubectl exec` runs is on the pod's network too: its host name resolves to the pod's address, and
    what it listens on every address is at that address."""
    await core.create_namespaced_pod("default", process_pod("shell", *python("import time; time.sleep(30)")))
    ip = (await wait_phase(core, "shell", "Running")).status.pod_ip
    code = ("import socket; s = socket.socket(); s.bind(('0.0.0.0', 2222)); "
            "print(socket.gethostbyname(socket.gethostname()), s.getsockname()[0])")
    done = await Kubectl(cluster, tmp_path).ok("exec", "shell", "--", sys.executable, "-c", code)
    assert done.out.split() == [ip, ip], done.out


async def test_pods_listen_on_one_port_and_reach_each_other_by_service_name(cluster, core, network):
    """TF_CONFIG's shape: three tasks, each listening on every address on port 2222, each reaching the others
    by their Services' names, in all four forms."""
    forms = {"a": "svc-a", "b": "svc-b.default", "c": "svc-c.default.svc.cluster.local"}
    for name in forms:
        await core.create_namespaced_service("default", headless(f"svc-{name}", {"task": name}))
    for name in forms:
        peers = ",".join(form for peer, form in forms.items() if peer != name)
        pod = process_pod(name, *python(ALL_TO_ALL, peers, "4" if name == "c" else "6"), env=pod_ip_env(),
                          labels={"task": name})
        await core.create_namespaced_pod("default", pod)
    pods = {name: await wait_phase(core, name, "Succeeded", "Failed", timeout=40) for name in forms}
    logs = {name: await core.read_namespaced_pod_log(name, "default") for name in forms}
    assert {name: p.status.phase for name, p in pods.items()} == dict.fromkeys(forms, "Succeeded"), logs
    ips = {name: p.status.pod_ip for name, p in pods.items()}
    assert f"('svc-b.default', '{ips['b']}')" in logs["a"], logs["a"]  # each answered with its own address
    assert f"('svc-a', '{ips['a']}')" in logs["c"], logs["c"]


async def test_a_pod_resolves_its_own_name_and_the_machine_s(cluster, core, network):
    code = ("import os, socket; print(socket.gethostname(), socket.gethostbyname(socket.gethostname()), "
            "socket.gethostbyname('localhost'), os.environ['POD_IP'])")
    await core.create_namespaced_pod("default", process_pod("self", *python(code), env=pod_ip_env()))
    pod = await wait_phase(core, "self", "Succeeded", "Failed")
    out = (await core.read_namespaced_pod_log("self", "default")).split()
    assert out == ["self", pod.status.pod_ip, "127.0.0.1", pod.status.pod_ip], out


async def test_localhost_in_a_pod_is_the_pod_and_the_host_stays_reachable(cluster, core, network):
    """A pod's own listener on every address answers at 127.0.0.1 and localhost inside it (torchrun's
    --standalone); another pod's, and the host's own listener on 127.0.0.1, stay where they are."""
    host = socket.socket()
    host.bind(("127.0.0.1", 0))
    host.listen()
    port = host.getsockname()[1]
    code = f"""
import socket, sys
server = socket.socket(socket.AF_INET6); server.bind(("::", 2222)); server.listen()
for target in ("127.0.0.1", "localhost", "::1"):
    socket.create_connection((target, 2222), timeout=5).close()
    server.accept()[0].close()
socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
print("ok")
"""
    try:
        for name in ("one", "two"):  # two at once: each one's 127.0.0.1:2222 is its own
            await core.create_namespaced_pod("default", process_pod(name, *python(code)))
        for name in ("one", "two"):
            pod = await wait_phase(core, name, "Succeeded", "Failed", timeout=20)
            log = await core.read_namespaced_pod_log(name, "default")
            assert pod.status.phase == "Succeeded" and log.strip() == "ok", log
    finally:
        host.close()


async def test_a_pod_on_the_host_network_shares_the_host_s_address(cluster, core, network):
    pod = process_pod("hostnet", *python("import time; time.sleep(30)"))
    pod["spec"]["hostNetwork"] = True
    await core.create_namespaced_pod("default", pod)
    assert (await wait_phase(core, "hostnet", "Running")).status.pod_ip == "127.0.0.1"


async def test_names_follow_services_and_pods_as_they_come_and_go(cluster, core, network):
    """A pod that starts before its peer's Service exists resolves the name once it does."""
    code = r"""
import socket, sys, time
deadline = time.monotonic() + 20
while True:
    try:
        print(socket.gethostbyname("late"), flush=True)
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit("late never resolved")
        time.sleep(0.1)
"""
    await core.create_namespaced_pod("default", process_pod("early", *python(code)))
    await wait_phase(core, "early", "Running")
    await core.create_namespaced_pod("default", process_pod("peer", *python("import time; time.sleep(30)"),
                                                            labels={"app": "late"}))
    peer = await wait_phase(core, "peer", "Running")
    await core.create_namespaced_service("default", headless("late", {"app": "late"}))
    early = await wait_phase(core, "early", "Succeeded", "Failed", timeout=25)
    assert early.status.phase == "Succeeded"
    assert (await core.read_namespaced_pod_log("early", "default")).strip() == peer.status.pod_ip


async def test_only_the_pod_s_own_namespace_resolves_short_names(cluster, core, network):
    await core.create_namespace({"metadata": {"name": "other"}})
    peer = process_pod("peer", *python("import time; time.sleep(30)"), labels={"app": "x"})
    await core.create_namespaced_pod("other", peer)
    await core.create_namespaced_service("other", headless("x", {"app": "x"}))

    async def running():
        pod = await core.read_namespaced_pod("peer", "other")
        return pod if pod.status.phase == "Running" else None

    ip = (await until(running)).status.pod_ip
    code = r"""
import socket
for name in ("x", "x.other", "x.other.svc", "x.other.svc.cluster.local"):
    try:
        print(name, socket.gethostbyname(name))
    except OSError:
        print(name, "-")
"""
    await core.create_namespaced_pod("default", process_pod("asker", *python(code)))
    await wait_phase(core, "asker", "Succeeded", "Failed")
    lines = (await core.read_namespaced_pod_log("asker", "default")).splitlines()
    assert lines == ["x -", f"x.other {ip}", f"x.other.svc {ip}", f"x.other.svc.cluster.local {ip}"], lines


@pytest.mark.slow  # compiles the shim
def test_what_is_missing_is_named_with_the_command_that_installs_it(monkeypatch):
    monkeypatch.setattr(preload, "find_nss_wrapper", lambda: None)
    found = preload.find()
    assert found.shim is not None and found.nss_wrapper is None
    assert "name resolves" in found.missing[0] and "nss_wrapper is not installed" in found.missing[0]
    assert "libnss-wrapper" in found.missing[0]
    monkeypatch.setattr(preload, "find_compiler", lambda: None)
    found = preload.find()
    assert found.shim is None and "no C compiler" in found.missing[0] and "gcc" in found.missing[0]
    monkeypatch.setattr(sys, "platform", "darwin")
    assert "need Linux" in preload.find().missing[0]


async def test_a_pod_reaches_the_api_server_where_its_environment_says(cluster, core, network):
    """KUBERNETES_SERVICE_HOST and _PORT, as every pod is given them, lead to the API server from the pod's own
    address (GET /version needs no credentials)."""
    code = (
        "import os, ssl, urllib.request\n"
        "url = f\"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ['KUBERNETES_SERVICE_PORT']}/version\"\n"
        "context = ssl.create_default_context(); context.check_hostname = False; context.verify_mode = ssl.CERT_NONE\n"
        "print(urllib.request.urlopen(url, context=context, timeout=10).status)\n")
    await core.create_namespaced_pod("default", process_pod("api", *python(code)))
    pod = await wait_phase(core, "api", "Succeeded", "Failed", timeout=20)
    log = await core.read_namespaced_pod_log("api", "default")
    assert pod.status.phase == "Succeeded" and log.strip() == "200", log


async def test_names_resolve_with_many_services(cluster, core, network):
    """More Services than nss_wrapper's default table holds (100 names: 25 Services of 4 names): every name
    still resolves (it read none of them past that, and every job's pods failed to find their peers)."""
    await core.create_namespaced_pod("default", process_pod("peer", *python("import time; time.sleep(30)"),
                                                            labels={"app": "many"}))
    ip = (await wait_phase(core, "peer", "Running")).status.pod_ip
    for index in range(60):
        await core.create_namespaced_service("default", headless(f"many-{index}", {"app": "many"}))
    code = "import socket; print(*{socket.gethostbyname(f'many-{i}') for i in range(60)})"
    await core.create_namespaced_pod("default", process_pod("asker", *python(code)))
    asker = await wait_phase(core, "asker", "Succeeded", "Failed")
    log = await core.read_namespaced_pod_log("asker", "default")
    assert asker.status.phase == "Succeeded" and log.split() == [ip], log
