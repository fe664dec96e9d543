"""The attacks of issue 21 on a LocalCluster, each refused: nothing is served without credentials.

A real API server also parses a body without Content-Type as JSON and checks neither Host nor
Origin; what protects it is that a request without a token is system:anonymous, who may read
only /healthz, /livez, /readyz and /version. Each attack is paired with the same request made
with the admin token, which succeeds: the refusal is the missing credential's doing, not a
broken request's.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import aiohttp
import pytest

from localcluster import LocalCluster
from localcluster.testing import NOBODY, read_as, world_traversable_directory

from .process_runner_support import process_pod, running, wait_pod

EVIL = {"Origin": "http://evil.example"}
PODS = "/api/v1/namespaces/default/pods"


def browser(cluster: LocalCluster) -> aiohttp.ClientSession:
    """What a web page's fetch() sends: no token, no Content-Type (mode 'no-cors' with a Blob body)."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=cluster.credentials.ssl_context),
                                 skip_auto_headers=["Content-Type"])


def pod_json(name: str) -> bytes:
    return json.dumps(process_pod(name, "sh", "-c", "id")).encode()


@pytest.mark.parametrize("tls", [True, False], ids=["https", "plain-http"])
async def test_a_browser_style_post_of_a_pod_is_refused_and_creates_nothing(tls):
    async with LocalCluster(tls=tls) as cluster, browser(cluster) as http:
        rebinding = {**EVIL, "Host": f"evil.example:{cluster.port}"}
        async with http.post(cluster.url + PODS, data=pod_json("pwned"), headers=rebinding) as answer:
            body = await answer.json()
        assert answer.status == 403 and body["message"] == (
            'pods is forbidden: User "system:anonymous" cannot create resource "pods" in API group "" in the '
            'namespace "default"')
        assert cluster.store.get(("", "pods"), ("default", "pwned")) is None
        # The same request with the token is served (a body without Content-Type is JSON, as the apiserver's).
        async with http.post(cluster.url + PODS, data=pod_json("mine"),
                             headers={**rebinding, **cluster.admin_headers}) as answer:
            assert answer.status == 201, await answer.text()


@pytest.mark.runner("process")
async def test_an_exec_upgrade_from_a_foreign_origin_without_the_token_runs_nothing(cluster, core, tmp_path):
    body = process_pod("sleeper", "sleep", "60")
    body["spec"]["containers"][0]["workingDir"] = str(tmp_path)
    await core.create_namespaced_pod("default", body)
    await wait_pod(core, "sleeper", running)
    exec_url = f"{cluster.url}{PODS}/sleeper/exec?command=sh&command=-c&command=touch+ran&stdout=true"
    async with browser(cluster) as http:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(exec_url, protocols=["v5.channel.k8s.io"], headers=EVIL)
        assert refused.value.status == 403
        assert not (tmp_path / "ran").exists()
        async with http.ws_connect(exec_url, protocols=["v5.channel.k8s.io"],
                                   headers={**EVIL, **cluster.admin_headers}) as ws:
            async for _ in ws:  # the command's streams, then the close when it has exited
                pass
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize("content_type", ["application/json", "text/plain", None])
async def test_minting_a_masters_token_without_the_admin_token_is_refused(cluster, content_type):
    evil = json.dumps({"user": "evil", "groups": ["system:masters"]})
    before = dict(cluster.access.authenticator.tokens)
    headers = {**EVIL, **({"Content-Type": content_type} if content_type else {})}
    carol = cluster.add_token("carol-token", "carol", ["devs"])
    async with browser(cluster) as http:
        for token, wanted in ((None, 401), ("guess", 401), (carol, 403)):
            auth = {"Authorization": f"Bearer {token}"} if token else {}
            async with http.post(cluster.url + "/_localcluster/tokens", data=evil, headers={**headers, **auth}) as r:
                assert r.status == wanted, (token, await r.text())
        assert cluster.access.authenticator.tokens == {**before, carol: cluster.access.authenticator.tokens[carol]}
        async with http.post(cluster.url + "/_localcluster/tokens", data=evil,
                             headers={**headers, **cluster.admin_headers}) as r:
            assert r.status == 200 and len(cluster.access.authenticator.tokens) == len(before) + 2


async def test_the_version_is_public_and_the_pods_are_not(cluster):
    async with browser(cluster) as http:
        async with http.get(cluster.url + "/version") as answer:
            assert answer.status == 200 and (await answer.json())["major"] == "1"
        async with http.get(cluster.url + PODS) as answer:
            assert answer.status == 403


# --- the kubeconfig: this user's only ------------------------------------------------------------


def assert_private(kubeconfig: Path) -> None:
    assert kubeconfig.stat().st_mode & 0o777 == 0o600
    assert kubeconfig.parent.stat().st_mode & 0o777 == 0o700


@pytest.mark.slow  # runs `cat` as another user
async def test_the_kubeconfig_is_readable_by_this_user_only(cluster):
    base = world_traversable_directory()
    try:
        kubeconfig = cluster.write_kubeconfig(base / "cache" / "kubeconfig")
        assert_private(kubeconfig)
        kubeconfig.chmod(0o644)  # an existing file keeps no looser mode: rewriting it makes it 0600 again
        assert_private(cluster.write_kubeconfig(kubeconfig))
        if os.geteuid() != 0:
            pytest.skip("reading as another user needs root (CI runs as root)")
        refused = await asyncio.to_thread(read_as, NOBODY, kubeconfig)
        assert refused.returncode != 0 and "Permission denied" in refused.stderr
        assert cluster.admin_token not in refused.stdout
        # The check can fail: a file other users may read, where they may reach it, is read.
        (base / "open.txt").write_text("readable")
        (base / "open.txt").chmod(0o644)
        assert (await asyncio.to_thread(read_as, NOBODY, base / "open.txt")).stdout == "readable"
    finally:
        shutil.rmtree(base)
