"""Exec credential plugins (kubeclient/exec_plugin.py) against localcluster, which gives the plugin tokens that
expire after a few seconds: requests keep succeeding across many expiries, the plugin runs about once per
token's life and never twice at once, a 401 re-runs it once and sends the request once more."""

from __future__ import annotations

import asyncio
import base64
import itertools
import time

import pytest
from kubernetes_asyncio.config.config_exception import ConfigException

from kubeclient.loading import load_settings

from .plugins import exec_kubeconfig
from .requests import Requests

# Seconds a token lives: long enough that a plugin run (a Python process, ~0.3 s; more on a loaded machine) fits in
# the renewal's margin (its last fifth), short enough for five lives in a test.
LIFETIME = 4.0


async def test_requests_keep_succeeding_across_many_expiries(cluster, tmp_path):
    kubeconfig, plugin = exec_kubeconfig(cluster, tmp_path, lifetime=LIFETIME)
    requests = Requests(await load_settings(str(kubeconfig)))
    started = time.monotonic()

    async def keep_asking() -> None:
        while len(plugin.runs()) < 5 and time.monotonic() - started < 30:
            status, user = await requests.whoami()
            assert (status, user) == (201, "plugin-user")

    await asyncio.gather(*(keep_asking() for _ in range(4)))
    elapsed = time.monotonic() - started
    runs = plugin.runs()
    assert len(runs) >= 5, "the plugin was not run again as its tokens expired"
    # About once per token's life (renewed in its last fifth), not once per request.
    assert len(runs) <= elapsed / (LIFETIME * 0.75) + 2, (len(runs), elapsed)
    assert len(requests.statuses) > 4 * len(runs)
    # Never two runs at once: each starts after the previous one ended.
    spans = sorted((run["start"], run["end"]) for run in runs)
    assert all(later[0] >= earlier[1] for earlier, later in itertools.pairwise(spans)), spans
    # Renewed before the tokens expired, not after their 401s: renewing only after a 401 costs each of the four
    # askers one per expiry; a renewal slowed past the margin on a loaded machine may cost a few. A 401 that did
    # come was renewed and retried.
    assert requests.unauthorized < len(runs), (requests.unauthorized, len(runs))
    assert requests.retried == requests.unauthorized


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


async def test_a_401_reruns_the_plugin_once_and_retries_once(cluster, tmp_path):
    kubeconfig, plugin = exec_kubeconfig(cluster, tmp_path)  # tokens of 10 minutes: only a 401 renews them
    requests = Requests(await load_settings(str(kubeconfig)))
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


async def test_a_failing_plugin_says_its_command_and_stderr(cluster, tmp_path):
    kubeconfig, _plugin = exec_kubeconfig(cluster, tmp_path, mode="fail")
    with pytest.raises(ConfigException) as raised:
        await load_settings(str(kubeconfig))
    message = str(raised.value)
    assert f"kubeconfig {kubeconfig} (context localcluster): exec plugin {tmp_path}/plugin.py: exit status 3: " \
           f"error: the session expired, log in again" in message
    assert message.endswith("log in again")  # trimmed


async def test_a_missing_plugin_says_so_with_its_install_hint(cluster, tmp_path):
    kubeconfig, plugin = exec_kubeconfig(cluster, tmp_path)
    plugin.path.unlink()
    with pytest.raises(ConfigException, match=r"plugin\.py: No such file or directory \(the test writes it\)"):
        await load_settings(str(kubeconfig))


async def test_a_slow_plugin_runs_while_requests_go_on_with_the_current_token(cluster, tmp_path):
    kubeconfig, plugin = exec_kubeconfig(cluster, tmp_path, lifetime=6.0, delay=1.0)
    requests = Requests(await load_settings(str(kubeconfig)))
    served: list[tuple[float, float]] = []

    async def keep_asking() -> None:
        while len(plugin.runs()) < 2:
            began = time.time()
            assert await requests.whoami() == (201, "plugin-user")
            served.append((began, time.time()))

    await asyncio.wait_for(asyncio.gather(*(keep_asking() for _ in range(3))), 30)
    # The second run started before the token ran out: requests were answered while it ran.
    run = plugin.runs()[1]
    assert any(run["start"] < began and ended < run["end"] for began, ended in served), run


async def test_closing_stops_a_run_in_progress(cluster, tmp_path):
    kubeconfig, plugin = exec_kubeconfig(cluster, tmp_path, delay=0.1)
    settings = await load_settings(str(kubeconfig))
    (tmp_path / "plugin.py").write_text(plugin.path.read_text().replace('os.environ["PLUGIN_DELAY"]', '"30"'))
    renewal = asyncio.ensure_future(settings.credentials.unauthorized())  # a run that would take 30 s
    await asyncio.sleep(0.3)  # the process started
    assert not renewal.done()
    await asyncio.wait_for(settings.credentials.close(), 5)
    with pytest.raises(asyncio.CancelledError):
        await renewal
    assert len(plugin.runs()) == 1
