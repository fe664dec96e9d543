"""`genericjob-controller local` and `python -m localcluster serve` let in only the holder of their token.

Both serve HTTPS with a random per-instance admin token, written to a kubeconfig only the user may
read (0600 in a 0700 directory); a request without it is system:anonymous (403 for anything but
/version and the health paths); a non-loopback --host prints what it exposes. `local` runs in the test's process
(local_inprocess.py), and so does `localcluster serve` but where its exit is the point.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import shutil
import signal
import sys

import aiohttp
import pytest

import localcluster.__main__ as localcluster_main
from controller.devtools.local_metrics import exposure_warning as metrics_exposure_warning
from localcluster import Credentials
from localcluster import exposure_warning as localcluster_exposure_warning
from localcluster.testing import NOBODY, read_as, world_traversable_directory

from .local_inprocess import LocalRun
from .subprocesses import READY_TIMEOUT, ROOT, until

PODS = "/api/v1/namespaces/default/pods"
EVIL_POD = json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pwned"},
                       "spec": {"containers": [{"name": "c", "image": "x", "command": ["id"]}]}})


async def browser_post(credentials: Credentials, port: int, token: str | None = None) -> int:
    """A web page's no-cors fetch() of a pod: no Content-Type, a rebound Host, a foreign Origin."""
    headers = {"Host": f"evil.example:{port}", "Origin": "http://evil.example"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=credentials.ssl_context),
                                     skip_auto_headers=["Content-Type"]) as http, \
            http.post(credentials.url + PODS, data=EVIL_POD.encode(), headers=headers) as answer:
        return answer.status


@pytest.mark.slow  # local's pods, or the programs
async def test_local_writes_a_private_kubeconfig_and_refuses_requests_without_its_token():
    cwd = world_traversable_directory()
    (cwd / ".cache").mkdir(mode=0o755)  # as the issue found it: made by something else, world-readable
    (cwd / ".cache").chmod(0o755)
    try:
        async with LocalRun(cwd, "--port", "0") as running:
            kubeconfig = running.kubeconfig
            assert kubeconfig == cwd / ".cache" / f"kubeconfig-{running.port}"
            assert kubeconfig.stat().st_mode & 0o777 == 0o600
            assert (cwd / ".cache").stat().st_mode & 0o777 == 0o700
            credentials = Credentials.from_kubeconfig(kubeconfig)
            assert credentials.url.startswith("https://") and credentials.certificate is not None
            assert not any("WARNING" in line for line in running.lines)  # 127.0.0.1: nothing to warn about
            assert await browser_post(credentials, running.port) == 403
            async with credentials.session() as http:
                async with http.get(credentials.url + PODS) as answer:
                    assert answer.status == 200 and (await answer.json())["items"] == []  # nothing was created
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=credentials.ssl_context)) as http:
                evil = {"user": "evil", "groups": ["system:masters"]}
                async with http.post(credentials.url + "/_localcluster/tokens", json=evil) as answer:
                    assert answer.status == 401
                async with http.get(credentials.url + "/version") as answer:
                    assert answer.status == 200
            if os.geteuid() == 0:  # CI runs as root: another user cannot read it
                refused = await asyncio.to_thread(read_as, NOBODY, kubeconfig)
                assert refused.returncode != 0 and "Permission denied" in refused.stderr
            assert await browser_post(credentials, running.port, credentials.token) == 201  # the token is the key
    finally:
        shutil.rmtree(cwd)


@pytest.mark.slow  # local's pods, or the programs
async def test_local_on_a_non_loopback_host_says_what_it_exposes(tmp_path):
    async with LocalRun(tmp_path, "--host", "0.0.0.0", "--port", "0") as running:
        warning = await running.line(r"^WARNING: serving on 0\.0\.0\.0:\d+")
        text = warning.string
        assert f"0.0.0.0:{running.port}, not a loopback address" in text
        assert "the Kubernetes API, and pods, exec and port-forward run processes as this user" in text
        assert f"the token in {running.kubeconfig} is the only key" in text


async def serve(cwd, *flags: str) -> tuple[asyncio.subprocess.Process, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "localcluster", "serve", "--port", "0", *flags, cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    async with asyncio.timeout(READY_TIMEOUT):
        while True:
            line = (await process.stdout.readline()).decode()
            if not line:
                pytest.fail(f"serve exited: {(await process.stderr.read()).decode()}")
            if line.startswith("localcluster listening on "):
                return process, line


@pytest.mark.slow  # local's pods, or the programs
async def test_serve_writes_its_own_private_kubeconfig_removed_at_exit(tmp_path):
    process, line = await serve(tmp_path)
    try:
        found = re.fullmatch(r"localcluster listening on (https://127\.0\.0\.1:(\d+)) \(kubeconfig: (.*)\)\n", line)
        assert found, line
        kubeconfig = tmp_path / ".cache" / f"localcluster-{found[2]}.kubeconfig"
        assert found[3] == str(kubeconfig)
        assert kubeconfig.stat().st_mode & 0o777 == 0o600 and kubeconfig.parent.stat().st_mode & 0o777 == 0o700
        credentials = Credentials.from_kubeconfig(kubeconfig)
        assert credentials.url == found[1]
        assert await browser_post(credentials, int(found[2])) == 403
        async with credentials.session() as http, http.get(credentials.url + "/_localcluster/stats") as answer:
            assert answer.status == 200
    finally:
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(60):
            assert await process.wait() == 0
    assert not kubeconfig.exists()  # its token died with the server


async def test_serve_on_a_non_loopback_host_says_what_it_exposes(tmp_path):
    """Its first line on stderr (serve in the test's process: the line is the point, not the process)."""
    args = localcluster_main.parse_args(["serve", "--port", "0", "--host", "0.0.0.0", "--kubeconfig-out",
                                         str(tmp_path / "kc")])
    with contextlib.redirect_stderr(io.StringIO()) as err, contextlib.redirect_stdout(io.StringIO()) as out:
        serving = asyncio.get_running_loop().create_task(localcluster_main.serve(args))
        try:
            await until(lambda: serving.done() or "localcluster listening on " in out.getvalue(),
                        timeout=READY_TIMEOUT, what="localcluster listening")
            assert not serving.done(), serving
        finally:
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)
    warning = err.getvalue().partition("\n")[0]
    assert re.match(r"WARNING: serving on 0\.0\.0\.0:\d+, not a loopback address: anyone who can reach it may "
                    r"try the Kubernetes API, and pods, exec and port-forward run processes as this user "
                    rf"\(uid {os.getuid()}\); the token in {re.escape(str(tmp_path / 'kc'))} is the only key\.",
                    warning), warning


@pytest.mark.parametrize("host", ["127.1", "0x7f.1", "2130706433", "017700000001", "::ffff:127.0.0.1", "[::1]",
                                  "::1%lo", "LOCALHOST", "localhost."])
def test_every_spelling_of_loopback_is_loopback(host):
    """Issue 47: what the resolver reads as loopback serves without the exposure warnings (localcluster's and
    `local --metrics-address`'s); an address that only looks like one is warned about."""
    assert localcluster_exposure_warning(host, 6443, None) is None
    assert metrics_exposure_warning(f"[{host.strip('[]')}]:9090") is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "128.1", "167772161", "::ffff:10.0.0.1"])
def test_an_address_that_only_looks_like_loopback_is_warned_about(host):
    assert "not a loopback address" in (localcluster_exposure_warning(host, 6443, None) or "")
    assert "not a loopback address" in (metrics_exposure_warning(f"[{host}]:9090") or "")
