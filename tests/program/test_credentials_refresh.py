"""`genericjob-controller run` whose credentials expire every few seconds (issue 36): an exec plugin's tokens, a
token file rotated on disk with the old token revoked, a client certificate rotated on disk and the old one
expired. The controller keeps reconciling across them: its reads (informers re-listing and re-watching, the
watches dropped on purpose), its writes (pods, statuses, Events) and its leader election (the Lease renewed
every 0.25 s, never lost)."""

from __future__ import annotations

import asyncio
import itertools
import time
from datetime import datetime

import pytest

from tests.e2e.conftest import QUICK, genericjob
from tests.kubeclient.plugins import ClusterOfProcess, base_kubeconfig, exec_kubeconfig, write

from .subprocesses import ControllerProcess, LocalClusterProcess, until

pytestmark = pytest.mark.slow  # each test runs the programs

MASTERS = ["system:masters"]


async def admin(cluster: LocalClusterProcess, action: str, body: dict | None = None) -> dict:
    async with cluster.session() as session, \
            session.post(f"{cluster.url}/_localcluster/{action}", json=body or {}) as answer:
        assert answer.status == 200, await answer.text()
        return await answer.json()


async def keeps_reconciling(cluster: LocalClusterProcess, controller: ControllerProcess, renewed, rounds: int = 4
                            ) -> None:
    """Each round: a credential renewal happens (`renewed()` waits for one), the watches are dropped, and a new
    job runs to the end. The Lease stays the controller's all along."""
    for i in range(rounds):
        await renewed()
        await admin(cluster, "drop-watches")  # the informers list and watch again, with the new credential
        await cluster.jobs.submit(genericjob(f"job-{i}", script=QUICK))
        await cluster.jobs.wait_phase(f"job-{i}", "Succeeded", timeout=60)  # a bound (20 s was short at a load of 15)
    lease = await cluster.lease()
    assert lease["spec"]["holderIdentity"] == controller.identity
    assert not [r for r in controller.logs if r.get("event") in ("leadership lost", "stopped leading")]
    samples = await controller.metrics()
    assert samples.value("leader_election_master_status", name="genericjob-controller") == 1


# Short enough that a run sees several; long enough that a plugin's run (a Python process and an HTTPS request) on a
# loaded machine ends well inside it: 3 s, beside the real frameworks' runs, did not.
TOKEN_LIFE = 5.0


async def test_an_exec_plugins_tokens_expiring_every_5_s(tmp_path):
    async with LocalClusterProcess(tmp_path) as cluster:
        user = tmp_path / "user"
        user.mkdir()
        kubeconfig, plugin = exec_kubeconfig(ClusterOfProcess(cluster), user, lifetime=TOKEN_LIFE, delay=0.05,
                                             PLUGIN_GROUPS='["system:masters"]')
        started = time.monotonic()
        async with ControllerProcess(cluster, "--kubeconfig", str(kubeconfig)) as controller:
            async def renewed() -> None:
                runs = len(plugin.runs())
                await until(lambda: len(plugin.runs()) > runs, timeout=10, what="the plugin run again")

            await keeps_reconciling(cluster, controller, renewed)
            elapsed = time.monotonic() - started
            runs = plugin.runs()
            assert len(runs) <= elapsed / (TOKEN_LIFE * 0.8) + 2, (len(runs), elapsed)  # about once per token's life
            spans = sorted((run["start"], run["end"]) for run in runs)
            assert all(later[0] >= earlier[1] for earlier, later in itertools.pairwise(spans)), spans
            assert runs[0]["info"]["spec"]["interactive"] is False
            assert runs[0]["info"]["spec"]["cluster"]["server"] == cluster.url


async def test_a_token_file_rotated_and_the_old_token_revoked(tmp_path):
    async with LocalClusterProcess(tmp_path) as cluster:
        user = tmp_path / "user"
        user.mkdir()
        tokens = [(await admin(cluster, "tokens", {"user": "file-user", "groups": MASTERS}))["token"]]
        (user / "token").write_text(tokens[0])
        kubeconfig = write(user, base_kubeconfig(ClusterOfProcess(cluster), {"tokenFile": "token"}))
        async with ControllerProcess(cluster, "--kubeconfig", str(kubeconfig)) as controller:
            async def renewed() -> None:
                # As a token issuer rotates it: a new token in the file, then the old one revoked (here: expired).
                fresh = (await admin(cluster, "tokens", {"user": "file-user", "groups": MASTERS}))["token"]
                (user / "token.new").write_text(fresh)
                (user / "token.new").rename(user / "token")
                # The old token registered again with an expiry a moment away: revoked.
                await admin(cluster, "tokens", {"user": "file-user", "token": tokens[-1], "expirationSeconds": 0.01})
                tokens.append(fresh)
                since = time.time() + 0.02
                await until(lambda: _lease_renewed_since(cluster, since), timeout=10, what="a renewal")

            await keeps_reconciling(cluster, controller, renewed)


async def _lease_renewed_since(cluster: LocalClusterProcess, since: float) -> bool:
    lease = await cluster.lease()
    return datetime.fromisoformat(lease["spec"]["renewTime"].replace("Z", "+00:00")).timestamp() > since


LIFETIME, PERIOD = 12.0, 3.0  # each certificate outlives the next one's issue by 9 s: the controller's
# check of the files (every 5 s) finds the new one before the old expires, even on a loaded machine


async def test_a_client_certificate_rotated_and_the_old_one_expired(tmp_path):
    """A rotator issues a certificate every PERIOD s, each expiring LIFETIME s after its issue, whatever the jobs
    do (a job slow to run must not outlast the credentials, as a chain timed by the rounds would let it). Each
    round waits until every certificate the controller could have held at the previous round's end has expired,
    then for a renewal of the Lease: the controller has moved on to a newer certificate."""
    async with LocalClusterProcess(tmp_path) as cluster:
        user = tmp_path / "user"
        user.mkdir()
        expiries: list[float] = []

        async def issue() -> None:
            issued = await admin(cluster, "client-certificates", {"user": "cert-user", "groups": MASTERS,
                                                                   "lifetime": LIFETIME})
            (user / "tls.crt.new").write_text(issued["certificate"])
            (user / "tls.key.new").write_text(issued["key"])
            # Key first, then the certificate: a reader between the two sees a pair that does not match and
            # keeps the previous one until the next check.
            (user / "tls.key.new").rename(user / "tls.key")
            (user / "tls.crt.new").rename(user / "tls.crt")
            expiries.append(time.time() + LIFETIME)  # at or after the certificate's notAfter

        async def rotate() -> None:
            while True:
                await asyncio.sleep(PERIOD)
                await issue()

        await issue()
        kubeconfig = write(user, base_kubeconfig(ClusterOfProcess(cluster), {"client-certificate": "tls.crt",
                                                                            "client-key": "tls.key"}))
        async with ControllerProcess(cluster, "--kubeconfig", str(kubeconfig)) as controller, \
                asyncio.TaskGroup() as rotating:
            rotator = rotating.create_task(rotate())
            held = len(expiries)  # the certificates the controller may hold now: those issued so far

            async def renewed() -> None:
                nonlocal held
                expired = expiries[held - 1] + 1.0  # the newest of them
                held = len(expiries)
                await until(lambda: time.time() > expired, timeout=LIFETIME + 5, what="the old certificate expired")
                since = time.time()
                await until(lambda: _lease_renewed_since(cluster, since), timeout=10, what="a renewal")

            try:
                await keeps_reconciling(cluster, controller, renewed, rounds=3)
            finally:
                rotator.cancel()
            assert len(expiries) >= 4, expiries
