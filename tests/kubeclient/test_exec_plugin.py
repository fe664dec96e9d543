"""Exec credential plugins (kubeclient/exec_plugin.py) against localcluster, which gives the plugin tokens that
expire: requests keep succeeding across many expiries, the plugin runs once per token's life and never twice at
once, a 401 re-runs it once and sends the request once more.

The tests of expiries drive a clock (tests/kubeclient/clock.py) that the client, the plugin and localcluster all
go by: a token expires when the test moves the time past its expirationTimestamp, and how long a plugin's
process takes to start on a loaded machine changes nothing of what is checked."""

from __future__ import annotations

import asyncio
import base64
import itertools
import logging
import math

import pytest
from kubernetes_asyncio.config.config_exception import ConfigException

from kubeclient.loading import load_settings
from localcluster.testing import until

from .plugins import exec_kubeconfig
from .requests import Requests

LIFETIME = 4.0  # seconds of the test's clock a token lives
# The renewal window is a token's last fifth but its last tenth (0.4 s here): the clock moves on by less.
STEP = 0.375
ASKERS = 4


async def test_requests_keep_succeeding_across_many_expiries(cluster, cluster_clock, tmp_path):
    clock = cluster_clock
    kubeconfig, plugin = exec_kubeconfig(cluster, tmp_path, lifetime=LIFETIME, clock=clock)
    settings = await load_settings(str(kubeconfig), clock=clock)
    requests = Requests(settings)
    rounds = 0
    while len(plugin.runs()) < 5:
        assert rounds < 100, "the plugin was not run again as its tokens expired"
        results = await asyncio.gather(*(requests.whoami() for _ in range(ASKERS)))
        assert results == [(201, "plugin-user")] * ASKERS, (rounds, results)
        # A renewal these requests started has ended before the time moves on: it took no time of the clock.
        await settings.credentials.source.settled()
        clock.advance(STEP)
        rounds += 1
    runs = plugin.runs()
    # Once per token's life, renewed in the background at the first round in its last fifth (from 3.2 s): every
    # 3.375 s, the first at the load.
    period = math.ceil(LIFETIME * 0.8 / STEP)
    assert [round((later["now"] - earlier["now"]) / STEP) for earlier, later in itertools.pairwise(runs)] \
        == [period] * (len(runs) - 1), runs
    assert len(requests.statuses) == ASKERS * rounds > ASKERS * len(runs)  # not once per request
    # Never two runs at once: one run at a time was started, and each started after the previous one ended.
    assert plugin.starts() == len(runs)
    spans = sorted((run["start"], run["end"]) for run in runs)
    assert all(later[0] >= earlier[1] for earlier, later in itertools.pairwise(spans)), spans
    # Renewed before the tokens expired, not after their 401s (which would cost each asker one per expiry).
    assert (requests.unauthorized, requests.retried) == (0, 0)


async def test_a_request_in_the_last_tenth_waits_for_the_new_token(cluster, cluster_clock, tmp_path):
    clock = cluster_clock
    kubeconfig, plugin = exec_kubeconfig(cluster, tmp_path, lifetime=LIFETIME, clock=clock)
    settings = await load_settings(str(kubeconfig), clock=clock)
    requests = Requests(settings)
    first = plugin.runs()[0]["token"]
    clock.advance(3.75)  # no request in the renewal window (from 3.2 s): now in the last tenth (from 3.6 s)
    assert await settings.credentials.authorization() != f"Bearer {first}"  # it waited for the plugin's run
    assert len(plugin.runs()) == 2
    clock.advance(0.25)
    assert cluster.access.authenticator.review(first) is None  # the first token has expired
    assert await requests.whoami() == (201, "plugin-user")
    assert (requests.unauthorized, plugin.starts()) == (0, 2)


async def test_the_plugin_gets_the_cluster_and_interactive_false_as_client_go_sends_them(cluster, tmp_path):
    kubeconfig, plugin = exec_kubeconfig(cluster, tmp_path)
    await load_settings(str(kubeconfig))
    info = plugin.runs()[0]["info"]
    assert info["kind"] == "ExecCredential" and info["apiVersion"] == "client.authentication.k8s.io/v1"
    assert info["spec"]["interactive"] is False
    assert info["spec"]["cluster"] == {"server": cluster.url,
                                       "certificate-authority-data": base64.b64encode(cluster.certificate).decode()}


async def test_without_provide_cluster_info_the_plugin_gets_no_cluster(cluster, tmp_path):
    kubeconfig, plugin = exec_kubeconfig(cluster, tmp_path, provide_cluster_info=False)
    await load_settings(str(kubeconfig))
    assert plugin.runs()[0]["info"]["spec"] == {"interactive": False}


async def test_a_401_reruns_the_plugin_once_and_retries_once(cluster, clock, tmp_path):
    kubeconfig, plugin = exec_kubeconfig(cluster, tmp_path, clock=clock)  # the time stands still: only a 401 renews
    requests = Requests(await load_settings(str(kubeconfig), clock=clock))
    assert await requests.whoami() == (201, "plugin-user")
    cluster.revoke_token(plugin.runs()[-1]["token"])
    assert await requests.whoami() == (201, "plugin-user")
    assert (requests.unauthorized, requests.retried, len(plugin.runs())) == (1, 1, 2)
    # Concurrent 401s of the same revoked token: one run, every request retried with its token.
    cluster.revoke_token(plugin.runs()[-1]["token"])
    results = await asyncio.gather(*(requests.whoami() for _ in range(6)))
    assert results == [(201, "plugin-user")] * 6
    assert len(plugin.runs()) == 3
    assert requests.retried == requests.unauthorized == 7


async def test_a_401_that_the_plugin_cannot_mend_stands(cluster, tmp_path):
    kubeconfig, plugin = exec_kubeconfig(cluster, tmp_path, mode="fixed")  # always the same unknown token
    requests = Requests(await load_settings(str(kubeconfig)))
    assert (await requests.whoami())[0] == 401
    # Run once more after the 401: the same token, so the request is not sent again.
    assert (len(plugin.runs()), requests.unauthorized, requests.retried) == (2, 1, 0)


async def test_a_plugin_giving_a_client_certificate(cluster, tmp_path):
    cert, key = cluster.client_certificate("cert-user", ["team"])
    (tmp_path / "user.crt").write_bytes(cert)
    (tmp_path / "user.key").write_bytes(key)
    kubeconfig, _plugin = exec_kubeconfig(cluster, tmp_path, mode="certificate", PLUGIN_CERT=str(tmp_path / "user.crt"),
                                         PLUGIN_KEY=str(tmp_path / "user.key"))
    settings = await load_settings(str(kubeconfig))
    assert await settings.credentials.authorization() is None
    context = settings.credentials.ssl_context()
    assert await Requests(settings).whoami() == (201, "cert-user")
    assert settings.credentials.ssl_context() is context  # the same certificate: the same context


SECRETS = ("--oidc-client-secret=s3cret-client", "refresh_token=r3fresh-token")


async def test_a_failing_plugin_is_named_by_its_executable_and_exit_code_only(cluster, cluster_clock, tmp_path,
                                                                            caplog, capfd):
    """Issue 47: a plugin's arguments and stderr may carry secrets, so its errors, raised and logged, name only the
    executable and the exit code (as client-go's). The attack: a plugin with a client secret among its arguments
    and a refresh token in its stderr fails, first at the load (the error raised) and then in a background renewal
    (the error logged); every log line and everything printed is searched for both. The same plugin done right
    (succeeding) serves its tokens."""
    caplog.set_level(logging.DEBUG)
    clock = cluster_clock
    kubeconfig, _plugin = exec_kubeconfig(cluster, tmp_path, mode="fail", args=(SECRETS[0],),
                                          PLUGIN_STDERR=f"error: {SECRETS[1]} expired")
    with pytest.raises(ConfigException) as raised:
        await load_settings(str(kubeconfig))
    assert str(raised.value) == (f"kubeconfig {kubeconfig} (context localcluster): exec plugin {tmp_path}/plugin.py: "
                                 "exit code 3 (its stderr is not logged: it may hold secrets; run the command by "
                                 "hand to see it)")
    # Done right, the same plugin (its secret argument too) serves; then it fails in a background renewal.
    fail_file = tmp_path / "fail-now"
    kubeconfig, _plugin = exec_kubeconfig(cluster, tmp_path, lifetime=LIFETIME, clock=clock, args=(SECRETS[0],),
                                          PLUGIN_STDERR=f"error: {SECRETS[1]} expired",
                                          PLUGIN_FAIL_FILE=str(fail_file))
    settings = await load_settings(str(kubeconfig), clock=clock)
    requests = Requests(settings)
    assert await requests.whoami() == (201, "plugin-user")
    fail_file.touch()
    clock.advance(3.375)  # into the renewal window: the request starts a background run, which fails
    assert await requests.whoami() == (201, "plugin-user")
    await settings.credentials.source.settled()
    lines = [record.getMessage() for record in caplog.records] + capfd.readouterr().err.splitlines() + [
        str(raised.value)]
    assert any(f"exec plugin {tmp_path}/plugin.py: exit code 3" in line for line in lines), lines
    leaked = [line for line in lines for secret in (*SECRETS, "s3cret", "r3fresh") if secret in line]
    assert not leaked, leaked
    await settings.credentials.close()


async def test_a_missing_plugin_says_so_with_its_install_hint(cluster, tmp_path):
    kubeconfig, plugin = exec_kubeconfig(cluster, tmp_path)
    plugin.path.unlink()
    with pytest.raises(ConfigException, match=r"plugin\.py: No such file or directory \(the test writes it\)"):
        await load_settings(str(kubeconfig))


async def test_a_slow_plugin_runs_while_requests_go_on_with_the_current_token(cluster, cluster_clock, tmp_path):
    clock = cluster_clock
    kubeconfig, plugin = exec_kubeconfig(cluster, tmp_path, lifetime=LIFETIME, clock=clock, gated=True)
    settings = await load_settings(str(kubeconfig), clock=clock)
    requests = Requests(settings)
    first = f"Bearer {plugin.runs()[0]['token']}"
    plugin.hold()  # the next run takes until the test says
    clock.advance(3.375)  # into the renewal window (3.2 to 3.6 s): the first request starts the run
    assert await requests.whoami() == (201, "plugin-user")
    await until(lambda: plugin.starts() == 2, what="the plugin's second run")
    # The run goes on, and requests are answered meanwhile, with the current token.
    results = await asyncio.gather(*(requests.whoami() for _ in range(3)))
    assert results == [(201, "plugin-user")] * 3
    assert await settings.credentials.authorization() == first
    assert len(plugin.runs()) == 1
    plugin.release()
    clock.advance(0.25)  # the last tenth: requests wait for the run
    assert await settings.credentials.authorization() == f"Bearer {plugin.runs()[1]['token']}"
    assert await requests.whoami() == (201, "plugin-user")
    assert (requests.unauthorized, plugin.starts()) == (0, 2)


async def test_closing_stops_a_run_in_progress(cluster, tmp_path):
    kubeconfig, plugin = exec_kubeconfig(cluster, tmp_path, gated=True)
    settings = await load_settings(str(kubeconfig))
    plugin.hold()  # the next run does not end on its own
    renewal = asyncio.ensure_future(settings.credentials.unauthorized())
    await until(lambda: plugin.starts() == 2, what="the plugin's process to start")
    assert not renewal.done()
    await asyncio.wait_for(settings.credentials.close(), 5)
    with pytest.raises(asyncio.CancelledError):
        await renewal
    assert len(plugin.runs()) == 1
