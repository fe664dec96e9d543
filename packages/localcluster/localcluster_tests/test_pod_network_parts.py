"""The pod network's parts on their own: the address pool, the name table's text, and the podnet shim's
rules, each checked without a cluster (the shim in real processes, preloaded as a pod's are)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap

import pytest

from localcluster.kubelet.network import preload
from localcluster.kubelet.network.addresses import HOSTS_PER_RANGE, AddressPool
from localcluster.kubelet.network.names import hosts_file, service_table
from localcluster.testing import starts_processes


def test_addresses_are_the_pod_s_until_released_and_not_reused_until_the_range_goes_round():
    pool = AddressPool(second_octet=77)
    a, b = pool.assign("a"), pool.assign("b")
    assert (a, b) == ("127.77.0.1", "127.77.0.2") and pool.assign("a") == a
    pool.release("a")
    assert pool.assign("c") == "127.77.0.3"  # a's address rests
    assert pool.network == "127.77.0.0/16"


def test_the_pool_goes_round_skipping_addresses_in_use_and_says_when_it_is_full():
    pool = AddressPool(second_octet=9)
    for n in range(HOSTS_PER_RANGE):
        pool.assign(str(n))
    assert pool.by_uid[str(HOSTS_PER_RANGE - 1)] == "127.9.255.254"
    with pytest.raises(RuntimeError, match=r"every address of 127\.9\.0\.0/16 is in use"):
        pool.assign("one more")
    pool.release("5")  # 127.9.0.6
    assert pool.assign("again") == "127.9.0.6"


def pod(name, ns="default", ip=None, labels=None, ready=True, phase="Running", **spec):
    status = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if ip:
        status["podIP"] = ip
    return {"metadata": {"name": name, "namespace": ns, "labels": labels or {}, "uid": name}, "spec": spec,
            "status": status}


def service(name, ns="default", selector=None, headless=True, publish=False):
    return {"metadata": {"name": name, "namespace": ns},
            "spec": {"selector": selector, "clusterIP": "None" if headless else "10.96.0.9",
                     "publishNotReadyAddresses": publish}}


def test_the_name_table_has_the_pod_s_own_name_and_every_service_s_ready_backends_in_both_families():
    me = pod("me", ip="127.5.0.1")
    peers = [pod("w0", ip="127.5.0.2", labels={"r": "0"}), pod("w1", ip="127.5.0.3", labels={"r": "1"}, ready=False),
             pod("done", ip="127.5.0.4", labels={"r": "0"}, phase="Succeeded")]
    other = [pod("x", ns="other", ip="127.5.0.9", labels={"r": "x"})]
    services = [service("s0", selector={"r": "0"}), service("s1", selector={"r": "1"}),
                service("s1p", selector={"r": "1"}, publish=True), service("nosel"),
                service("sx", ns="other", selector={"r": "x"})]
    text = hosts_file(me, "127.5.0.1", service_table(services, {"default": [me, *peers], "other": other}))
    assert text.splitlines() == [
        "127.5.0.1\tme", "::ffff:127.5.0.1\tme",
        "127.5.0.2\ts0 s0.default s0.default.svc s0.default.svc.cluster.local",
        "::ffff:127.5.0.2\ts0 s0.default s0.default.svc s0.default.svc.cluster.local",
        # s1's only pod is not ready: no answer, as cluster DNS gives none; s1p publishes it anyway
        "127.5.0.3\ts1p s1p.default s1p.default.svc s1p.default.svc.cluster.local",
        "::ffff:127.5.0.3\ts1p s1p.default s1p.default.svc s1p.default.svc.cluster.local",
        "127.5.0.9\tsx.other sx.other.svc sx.other.svc.cluster.local",  # another namespace: no short name
        "::ffff:127.5.0.9\tsx.other sx.other.svc sx.other.svc.cluster.local",
    ]


def test_hostname_and_subdomain_give_the_fully_qualified_names_of_a_headless_service_s_pod():
    me = pod("me-0", ip="127.5.0.1", labels={"app": "a"}, hostname="me", subdomain="grp")
    text = hosts_file(me, "127.5.0.1", service_table([service("grp", selector={"app": "a"})], {"default": [me]}))
    lines = text.splitlines()
    assert lines[0] == "127.5.0.1\tme.grp.default.svc.cluster.local me"
    assert "127.5.0.1\tme.grp me.grp.default me.grp.default.svc me.grp.default.svc.cluster.local" in lines


# --- the shim, in real processes ------------------------------------------------------------------------


@pytest.fixture(scope="module")
@starts_processes
def shim():
    library, why = preload.build_shim()
    assert library is not None, why
    return library


def run(shim, ip: str | None, code: str) -> str:
    env = {"PATH": os.environ["PATH"], "LD_PRELOAD": str(shim)}
    if ip:
        env["LOCALCLUSTER_POD_IP"] = ip
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


BIND = """
import socket, sys
kind, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, getattr(socket, kind))
if len(sys.argv) > 4:
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
s.bind((host, port))
print(s.getsockname()[0])
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET6) as probe:  # free on every address, both families
        probe.bind(("::", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(("kind", "host", "v6only", "expected"), [
    ("SOCK_STREAM", "0.0.0.0", False, "127.61.0.7"),
    ("SOCK_STREAM", "127.0.0.1", False, "127.61.0.7"),
    ("SOCK_STREAM", "::", False, "::ffff:127.61.0.7"),
    ("SOCK_STREAM", "::1", False, "::ffff:127.61.0.7"),
    ("SOCK_DGRAM", "0.0.0.0", False, "127.61.0.7"),  # UDP listeners too
    ("SOCK_STREAM", "::", True, "::"),  # an IPv6-only socket cannot hold an IPv4 address: left alone
    ("SOCK_STREAM", "127.61.0.7", False, "127.61.0.7"),  # its own address: as asked
    ("SOCK_STREAM", "127.0.0.2", False, "127.0.0.2"),  # another loopback address: as asked
])
def test_the_shim_moves_wildcard_and_loopback_binds_to_the_pod_s_address(shim, kind, host, v6only, expected):
    args = f"import sys; sys.argv = ['x', {kind!r}, {host!r}, {free_port()}{', 1' if v6only else ''}]\n"
    assert run(shim, "127.61.0.7", args + BIND) == expected


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "127.0.0.1"])
def test_an_ephemeral_port_stays_where_it_was_asked_for(shim, host):
    """Port 0 collides with nothing; a client bound to the wildcard must still reach the internet."""
    assert run(shim, "127.61.0.7", f"import sys; sys.argv = ['x', 'SOCK_STREAM', {host!r}, 0]\n" + BIND) == host


def test_without_a_pod_address_the_shim_changes_nothing(shim):
    code = f"import sys; sys.argv = ['x', 'SOCK_STREAM', '0.0.0.0', {free_port()}]\n"
    assert run(shim, None, code + BIND) == "0.0.0.0"


def test_a_connection_leaves_from_the_pod_s_address_only_toward_the_loopback(shim):
    code = """
import socket
server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen()  # port 0: stays on 127.0.0.1
client = socket.create_connection(server.getsockname())
print(server.accept()[1][0], client.getsockname()[0])
"""
    assert run(shim, "127.61.0.7", code).split() == ["127.61.0.7", "127.61.0.7"]
