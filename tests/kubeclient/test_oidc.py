"""The oidc auth-provider: its id-token refreshed at the issuer's token endpoint (a scripted issuer whose id-tokens
localcluster accepts for 2 s, and which rotates refresh tokens) before it expires, and after a 401."""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import time

import pytest
from aiohttp import web
from kubernetes_asyncio.config.config_exception import ConfigException

from kubeclient.loading import load_settings

from .plugins import base_kubeconfig, write
from .requests import Requests

LIFETIME = 2.0


def jwt(claims: dict) -> str:
    def part(doc: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part(claims)}.{secrets.token_urlsafe(8)}"


class Issuer:
    """An OIDC issuer that refreshes: each refresh token works once (rotated), each id-token lives LIFETIME."""

    def __init__(self, cluster) -> None:
        self.cluster, self.refresh_token, self.refreshes = cluster, "refresh-0", 0
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def __aenter__(self) -> Issuer:
        app = web.Application()
        app.router.add_get("/.well-known/openid-configuration", self.discovery)
        app.router.add_post("/token", self.token)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc) -> None:
        await self.runner.cleanup()

    async def discovery(self, _: web.Request) -> web.Response:
        return web.json_response({"issuer": self.url, "token_endpoint": self.url + "/token"})

    async def token(self, request: web.Request) -> web.Response:
        form = await request.post()
        expected = "Basic " + base64.b64encode(b"controller:s3cret").decode()
        if request.headers.get("Authorization") != expected or form.get("grant_type") != "refresh_token" \
                or form.get("refresh_token") != self.refresh_token:
            return web.json_response({"error": "invalid_grant", "error_description": "refresh token used"}, status=400)
        self.refreshes += 1
        self.refresh_token = f"refresh-{self.refreshes}"
        now = time.time()
        id_token = jwt({"iss": self.url, "sub": "oidc-user", "iat": now, "exp": now + LIFETIME})
        self.cluster.add_token(id_token, "oidc-user", expires_in=LIFETIME)
        return web.json_response({"id_token": id_token, "refresh_token": self.refresh_token})


def oidc_kubeconfig(cluster, directory, issuer: Issuer, id_token: str):
    provider = {"name": "oidc", "config": {"idp-issuer-url": issuer.url, "client-id": "controller",
                                           "client-secret": "s3cret", "id-token": id_token,
                                           "refresh-token": "refresh-0"}}
    return write(directory, base_kubeconfig(cluster, {"auth-provider": provider}))


async def test_the_id_token_is_refreshed_before_it_expires(cluster, tmp_path):
    async with Issuer(cluster) as issuer:
        expired = jwt({"sub": "oidc-user", "iat": time.time() - 60, "exp": time.time() - 30})
        requests = Requests(await load_settings(str(oidc_kubeconfig(cluster, tmp_path, issuer, expired))))
        assert issuer.refreshes == 1  # at load: the kubeconfig's id-token had expired
        deadline = time.monotonic() + 30
        while issuer.refreshes < 4:
            assert time.monotonic() < deadline
            assert await requests.whoami() == (201, "oidc-user")
            await asyncio.sleep(0.05)
        assert requests.unauthorized <= 1
        # A 401 refreshes at once (with the latest refresh token) and the request is sent again.
        cluster.revoke_token((await requests.settings.credentials.authorization()).removeprefix("Bearer "))
        refreshes = issuer.refreshes
        assert await requests.whoami() == (201, "oidc-user")
        assert issuer.refreshes == refreshes + 1 and requests.retried == requests.unauthorized


async def test_a_refused_refresh_says_what_the_issuer_said(cluster, tmp_path):
    async with Issuer(cluster) as issuer:
        issuer.refresh_token = "another"
        with pytest.raises(ConfigException, match=r"refused to refresh the token \(400: refresh token used\)"):
            await load_settings(str(oidc_kubeconfig(cluster, tmp_path, issuer, "")))
