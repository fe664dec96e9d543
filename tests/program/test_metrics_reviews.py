"""What a scrape costs the API server: routing before authentication, cached reviews, a limit on reviews at once.

Issue 36: 30 made-up tokens made 30 TokenReviews and 30 unknown paths 30 SubjectAccessReviews. Here the
reviews the controller makes are counted where they arrive (localcluster's request accounting), with the
manifests' RBAC applied and the scrapers ServiceAccounts of localcluster, as in test_metrics_security.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from controller.runtime.certs import server_context
from controller.runtime.metrics_auth import (
    ALLOW_TTL,
    AUTHN_TTL,
    MAX_REVIEWS_IN_FLIGHT,
    UNKNOWN_TOKEN_REVIEWS,
    DelegatingAuth,
)
from controller.runtime.server import Server
from tests.clients import controller_client

from .inprocess import cluster_with_crds
from .manifests_support import apply_rbac, rendered, service_account_client  # noqa: F401
from .test_metrics_security import Scraper, bind_reader, serving

TOKEN_REVIEWS, ACCESS_REVIEWS = "tokenreviews", "subjectaccessreviews"
FLOOD_SECONDS = 2.0


@pytest.fixture
async def cluster():
    async with cluster_with_crds() as running:
        yield running


def made(cluster, resource: str) -> int:
    """Reviews of `resource` the API server answered, whatever the answer."""
    return sum(n for (_, r, _), n in cluster.faults.requests.items() if r == resource)


def prometheus_token(cluster, rendered_objects) -> str:
    apply_rbac(cluster, rendered_objects)
    bind_reader(cluster, "monitoring", "prometheus")
    return cluster.service_account_token("monitoring", "prometheus")


async def fetch(scraper: Scraper, path: str, token: str, method: str = "GET") -> aiohttp.ClientResponse:
    url = scraper.url.removesuffix("/metrics") + path
    async with aiohttp.ClientSession() as session, session.request(
            method, url, headers={"Authorization": f"Bearer {token}"}, ssl=scraper.tls) as got:
        await got.read()
        return got


@pytest.mark.runner("scripted")
async def test_unknown_paths_are_404_without_a_review(cluster, rendered):  # noqa: F811
    token = prometheus_token(cluster, rendered)
    async with service_account_client(cluster) as api_client, controller_client(api_client) as rest_client, \
            serving(rest_client) as (_, scraper):
        answers = await asyncio.gather(*(fetch(scraper, f"/made-up/{n}", token) for n in range(30)))
        assert [a.status for a in answers] == [404] * 30
        # Made-up tokens on made-up paths, the health paths (not served here) and another method: no review.
        answers = await asyncio.gather(*(fetch(scraper, path, f"made-up-{n}") for n, path in
                                         enumerate(["/healthz", "/readyz", "/metrics/x", "/"])))
        assert [a.status for a in answers] == [404] * 4
        assert (await fetch(scraper, "/metrics", token, method="POST")).status == 405
        assert made(cluster, ACCESS_REVIEWS) == 0 and made(cluster, TOKEN_REVIEWS) == 0
        # The route that exists is still guarded, and reviewed once.
        assert (await fetch(scraper, "/metrics", token)).status == 200
        assert (await fetch(scraper, "/metrics", "made-up")).status == 401
        assert made(cluster, TOKEN_REVIEWS) == 2 and made(cluster, ACCESS_REVIEWS) == 1


@pytest.mark.runner("scripted")
async def test_one_token_scraped_20_times_is_reviewed_once(cluster, rendered):  # noqa: F811
    token = prometheus_token(cluster, rendered)
    async with service_account_client(cluster) as api_client, controller_client(api_client) as rest_client, \
            serving(rest_client) as (_, scraper):
        # Ten at once (they share the one review in flight), then ten one after another (cached).
        statuses = [status for status, _ in await asyncio.gather(*(scraper.get(token) for _ in range(10)))]
        statuses += [(await scraper.get(token))[0] for _ in range(10)]
        assert statuses == [200] * 20
        assert made(cluster, TOKEN_REVIEWS) == 1 and made(cluster, ACCESS_REVIEWS) == 1


@pytest.mark.runner("scripted")
async def test_30_made_up_tokens_at_once_make_at_most_the_limit_of_reviews(cluster, rendered):  # noqa: F811
    """A slow API server (each TokenReview 5 s, so that all 30 arrive while the first are in flight, on a loaded
    machine too): the first MAX_REVIEWS_IN_FLIGHT scrapes are reviewed, the others answered 429 with Retry-After
    (not queued: they would hold a slot's worth of waiting each)."""
    apply_rbac(cluster, rendered)
    async with service_account_client(cluster) as api_client, controller_client(api_client) as rest_client, \
            serving(rest_client) as (_, scraper):
        cluster.faults.configure(latency=5.0, resources=[TOKEN_REVIEWS])
        answers = await asyncio.gather(*(fetch(scraper, "/metrics", f"made-up-{n}") for n in range(30)))
        cluster.faults.clear()
        statuses = sorted(a.status for a in answers)
        assert statuses == [401] * MAX_REVIEWS_IN_FLIGHT + [429] * (30 - MAX_REVIEWS_IN_FLIGHT), statuses
        assert all(a.headers["Retry-After"] == "1" for a in answers if a.status == 429)
        assert made(cluster, TOKEN_REVIEWS) == MAX_REVIEWS_IN_FLIGHT
        assert made(cluster, ACCESS_REVIEWS) == 0
        # The slots are free again: a token is reviewed, not refused.
        assert (await fetch(scraper, "/metrics", "made-up-later")).status == 401
        assert made(cluster, TOKEN_REVIEWS) == MAX_REVIEWS_IN_FLIGHT + 1


@contextlib.asynccontextmanager
async def guarded(auth: DelegatingAuth) -> AsyncIterator[Scraper]:
    """Only the metrics endpoint, with `auth`: a Server without a Manager."""
    server = Server(CollectorRegistry(), problems=list, unready=lambda: None, metrics_auth=auth)
    try:
        bound = await server.start(metrics="127.0.0.1:0", health="0", metrics_tls=server_context(None))
        yield Scraper(bound["metrics"])
    finally:
        await server.stop()


@pytest.mark.runner("scripted")
async def test_made_up_tokens_do_not_evict_a_known_one(cluster, rendered):  # noqa: F811
    token = prometheus_token(cluster, rendered)
    async with service_account_client(cluster) as api_client, controller_client(api_client) as rest_client, \
            guarded(DelegatingAuth(rest_client, max_entries=4)) as scraper:
        assert (await scraper.get(token))[0] == 200
        for n in range(10):  # one after another: more made-up tokens than the cache keeps
            assert (await scraper.get(f"made-up-{n}"))[0] == 401
        assert made(cluster, TOKEN_REVIEWS) == 11
        assert (await scraper.get(token))[0] == 200
        assert made(cluster, TOKEN_REVIEWS) == 11 and made(cluster, ACCESS_REVIEWS) == 1
        # The made-up ones are bounded: the oldest are asked again, the latest four are not.
        assert (await scraper.get("made-up-9"))[0] == 401 and made(cluster, TOKEN_REVIEWS) == 11
        assert (await scraper.get("made-up-0"))[0] == 401 and made(cluster, TOKEN_REVIEWS) == 12


@pytest.mark.runner("scripted")
async def test_a_failed_review_is_not_cached(cluster, rendered):  # noqa: F811
    """An API server that cannot answer: 500, and the next scrape asks again (and gets through)."""
    token = prometheus_token(cluster, rendered)
    async with service_account_client(cluster) as api_client, controller_client(api_client) as rest_client, \
            guarded(DelegatingAuth(rest_client, timeout=2.0, retry_delays=(0.05,))) as scraper:
        cluster.faults.configure(error_rate=1.0, error_code=500, resources=[TOKEN_REVIEWS])
        assert (await scraper.get(token))[0] == 500
        cluster.faults.clear()
        assert (await scraper.get(token))[0] == 200


@pytest.mark.runner("scripted")
async def test_a_flood_of_made_up_tokens_makes_at_most_the_rate_of_reviews(cluster, rendered):  # noqa: F811
    """Issue 47: 24 clients sending made-up tokens as fast as they can make at most the unknown tokens' rate of
    TokenReviews (its burst, and its rate a second after); a token the API server knew before is still reviewed
    meanwhile (its own bucket) once its cached answer has expired; and the reviews leave on connections of
    their own, not the controller's."""
    token = prometheus_token(cluster, rendered)
    clock = [0.0]
    async with service_account_client(cluster) as api_client, controller_client(api_client) as rest_client:
        auth = DelegatingAuth(rest_client, clock=lambda: clock[0])
        async with guarded(auth) as scraper:
            assert (await scraper.get(token))[0] == 200  # known from now on
            clock[0] += AUTHN_TTL + ALLOW_TTL  # every cached answer expired: the next scrape is reviewed again
            made_before, statuses = made(cluster, TOKEN_REVIEWS), []
            loop = asyncio.get_running_loop()
            started = loop.time()

            async def flood(client: int) -> None:
                async with aiohttp.ClientSession() as session:
                    for n in itertools.count():
                        if loop.time() - started > FLOOD_SECONDS:
                            return
                        async with session.get(scraper.url, ssl=scraper.tls,
                                               headers={"Authorization": f"Bearer made-up-{client}-{n}"}) as got:
                            statuses.append(got.status)

            flooding = asyncio.gather(*(flood(client) for client in range(24)))
            known = await scraper.get(token)
            await flooding
            elapsed = loop.time() - started
            assert known[0] == 200  # reviewed during the flood, on the known tokens' bucket
            qps, burst = UNKNOWN_TOKEN_REVIEWS
            reviewed = made(cluster, TOKEN_REVIEWS) - made_before - 1
            assert statuses.count(401) == reviewed <= burst + qps * elapsed + 1, (reviewed, elapsed)
            assert statuses.count(429) == len(statuses) - reviewed and len(statuses) > 2 * reviewed
            # The reviews' connections are not the controller's.
            assert auth.rest.write_pool is not None and auth.rest.write_pool is not rest_client.write_pool
