"""The oidc auth-provider: its id-token refreshed at the issuer's token endpoint (a scripted issuer whose id-tokens
localcluster accepts for 2 s, and which rotates refresh tokens) before it expires, and after a 401. The 2 s are of
the test's clock (tests/kubeclient/clock.py), which the client, the issuer and localcluster go by."""

from __future__ import annotations

import base64
import itertools
import json
import math
import secrets

import pytest
from aiohttp import web
from kubernetes_asyncio.config.config_exception import ConfigException

from kubeclient.loading import load_settings

from .clock import FakeClock
from .plugins import base_kubeconfig, write
from .requests import Requests

LIFETIME = 2.0
# An id-token is refreshed in the background in its last fifth but its last tenth (0.2 s): the clock moves on by less.
STEP = 0.125


def jwt(claims: dict) -> str:
    def part(doc: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part(claims)}.{secrets.token_urlsafe(8)}"


class Issuer:
    """An OIDC issuer that refreshes: each refresh token works once (rotated), each id-token lives LIFETIME."""

    def __init__(self, cluster, clock: FakeClock) -> None:
        self.cluster, self.clock, self.refresh_token, self.refreshes = cluster, clock, "refresh-0", 0
        self.issued: list[float] = []  # the clock's time of each refresh
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
        now = self.clock.time()
        self.issued.append(now)
        id_token = jwt({"iss": self.url, "sub": "oidc-user", "iat": now, "exp": now + LIFETIME})
        self.cluster.add_token(id_token, "oidc-user", expires_in=LIFETIME)
        return web.json_response({"id_token": id_token, "refresh_token": self.refresh_token})


def oidc_kubeconfig(cluster, directory, issuer: Issuer, id_token: str):
    provider = {"name": "oidc", "config": {"idp-issuer-url": issuer.url, "client-id": "controller",
                                           "client-secret": "s3cret", "id-token": id_token,
                                           "refresh-token": "refresh-0"}}
    return write(directory, base_kubeconfig(cluster, {"auth-provider": provider}))


async def test_the_id_token_is_refreshed_before_it_expires(cluster, cluster_clock, tmp_path):
    clock = cluster_clock
    async with Issuer(cluster, clock) as issuer:
        expired = jwt({"sub": "oidc-user", "iat": clock.time() - 60, "exp": clock.time() - 30})
        settings = await load_settings(str(oidc_kubeconfig(cluster, tmp_path, issuer, expired)), clock=clock)
        requests = Requests(settings)
        assert issuer.refreshes == 1  # at load: the kubeconfig's id-token had expired
        rounds = 0
        while issuer.refreshes < 4:
            assert rounds < 100, "the id-token was not refreshed as it expired"
            assert await requests.whoami() == (201, "oidc-user")
            await settings.credentials.source.settled()  # a refresh this request started took no time of the clock
            clock.advance(STEP)
            rounds += 1
        # Refreshed in the background at the first request in each id-token's last fifth (from 1.6 s): every
        # 1.625 s, before any expired.
        period = math.ceil(LIFETIME * 0.8 / STEP)
        assert [round((later - earlier) / STEP) for earlier, later in itertools.pairwise(issuer.issued)] \
            == [period] * 3, issuer.issued
        assert requests.unauthorized == 0
        # A 401 refreshes at once (with the latest refresh token) and the request is sent again.
        cluster.revoke_token((await requests.settings.credentials.authorization()).removeprefix("Bearer "))
        refreshes = issuer.refreshes
        assert await requests.whoami() == (201, "oidc-user")
        assert issuer.refreshes == refreshes + 1 and requests.retried == requests.unauthorized


async def test_a_refused_refresh_says_what_the_issuer_said(cluster, clock, tmp_path):
    async with Issuer(cluster, clock) as issuer:
        issuer.refresh_token = "another"
        with pytest.raises(ConfigException, match=r"refused to refresh the token \(400: refresh token used\)"):
            await load_settings(str(oidc_kubeconfig(cluster, tmp_path, issuer, "")))
