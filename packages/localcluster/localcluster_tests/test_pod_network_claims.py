"""Each local cluster's pod network is a /16 that no other one on this machine holds (claims.py): claims in one
process and across processes never share a network, a claim left by a killed run is taken again, and two
clusters started where all but two networks are held get those two, one each."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import signal
import sys

import pytest
from kubernetes_asyncio import client, config

from localcluster import LocalCluster
from localcluster.kubelet.network.claims import CLAIMS_ENV, SECOND_OCTETS, claim_network

from .process_runner_support import process_pod, python, wait_phase

# Claims networks among argv[1] (comma-separated octets) until none is left, prints them on one line, then
# holds them until its stdin closes.
CLAIMER = r"""
import sys
from pathlib import Path
from localcluster.kubelet.network.claims import claim_network
octets = [int(o) for o in sys.argv[2].split(",")]
held = []
while (claim := claim_network(Path(sys.argv[1]), octets)) is not None:
    held.append(claim)
print(",".join(str(c.octet) for c in held), flush=True)
sys.stdin.read()
"""


async def claimer(directory, octets):
    """A process running CLAIMER, and the octets it claimed."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CLAIMER, str(directory), ",".join(map(str, octets)),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    async with asyncio.timeout(20):
        line = (await proc.stdout.readline()).decode().strip()
    return proc, {int(o) for o in line.split(",") if o}


async def ended(proc) -> None:
    async with asyncio.timeout(10):
        await proc.wait()


def test_claims_in_one_process_never_share_a_network_and_a_released_one_is_free_again(tmp_path):
    claims = []
    while (claim := claim_network(tmp_path)) is not None:
        claims.append(claim)
    assert sorted(c.octet for c in claims) == list(SECOND_OCTETS)  # every network once, then none
    freed = claims.pop(7)
    freed.release()
    assert not freed.path.exists()  # its owner removes its file
    again = claim_network(tmp_path)
    assert again is not None and again.octet == freed.octet
    assert again.path.read_text() == f"{os.getpid()}\n"  # the owner, for a person reading the directory
    for claim in [*claims, again]:
        claim.release()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # processes claiming networks
async def test_two_processes_claiming_at_once_never_share_a_network(tmp_path):
    octets = range(40, 52)
    first, second = await asyncio.gather(claimer(tmp_path, octets), claimer(tmp_path, octets))
    try:
        (_, mine), (_, theirs) = first, second
        assert not mine & theirs, (mine, theirs)
        assert mine | theirs == set(octets)  # together they hold every one; neither took one the other held
    finally:
        for proc, _ in (first, second):
            proc.stdin.close()
            await ended(proc)


@pytest.mark.slow  # processes claiming networks
async def test_a_claim_held_by_a_live_process_is_refused_and_one_left_by_a_killed_process_is_taken(tmp_path):
    proc, held = await claimer(tmp_path, [99])
    assert held == {99}
    assert claim_network(tmp_path, [99]) is None  # alive: its claim stands
    proc.send_signal(signal.SIGKILL)  # gone without releasing: its file stays, naming it
    await ended(proc)
    assert (tmp_path / "127.99.0.0-16").read_text() == f"{proc.pid}\n"
    claim = claim_network(tmp_path, [99])
    assert claim is not None and claim.octet == 99
    assert claim.path.read_text() == f"{os.getpid()}\n"  # made afresh, naming its new owner
    claim.release()


@pytest.mark.slow  # clusters with the process runner
async def test_two_clusters_get_the_last_two_free_networks_one_each(tmp_path, monkeypatch):
    """All but two networks held (by this process): two clusters started then get those two, and their pods
    addresses in them; stopping a cluster releases its network."""
    monkeypatch.setenv(CLAIMS_ENV, str(tmp_path))
    free = {77, 201}
    held = [claim_network(tmp_path, [octet]) for octet in SECOND_OCTETS if octet not in free]
    try:
        async with LocalCluster(runner="process") as one, LocalCluster(runner="process") as two:
            networks = [c.runner.network for c in (one, two)]
            assert all(n.own_addresses for n in networks), networks[0].summary()
            assert {n.pool.octet for n in networks} == free
            for cluster, network in zip((one, two), networks, strict=True):
                configuration = client.Configuration()
                await config.load_kube_config_from_dict(cluster.kubeconfig(), client_configuration=configuration)
                async with client.ApiClient(configuration) as api:
                    core = client.CoreV1Api(api)
                    await core.create_namespaced_pod("default", process_pod("p", *python("import time; "
                                                                                         "time.sleep(30)")))
                    pod = await wait_phase(core, "p", "Running")
                assert ipaddress.ip_address(pod.status.pod_ip) in ipaddress.ip_network(network.pool.network)
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(("127.77.", "127.201."))] == []
    finally:
        for claim in held:
            assert claim is not None
            claim.release()


@pytest.mark.parametrize("make", ["file", "link"])
def test_a_directory_that_cannot_hold_claims_leaves_the_choice_to_chance(tmp_path, make):
    """A file, or a link (which would send the claims wherever it points), where the directory should be."""
    where = tmp_path / "claims"
    if make == "file":
        where.write_text("not a directory")
    else:
        (tmp_path / "elsewhere").mkdir()
        where.symlink_to(tmp_path / "elsewhere")
    assert claim_network(where) is None
    assert not (tmp_path / "elsewhere").exists() or list((tmp_path / "elsewhere").iterdir()) == []
