"""Secure metrics (the default of `run`): /metrics over HTTPS, each scrape's bearer token reviewed by the API
server (TokenReview) and its user authorised for `get /metrics` (SubjectAccessReview).

The controller authenticates as the manifests' ServiceAccount with the manifests' RBAC applied, so the
test also shows that rbac.yaml grants what the reviews need; the scrapers are ServiceAccounts with and
without a binding to the genericjob-metrics-reader ClusterRole of user-rbac.yaml.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import ssl
from collections.abc import AsyncIterator

import aiohttp
import pytest

from controller.runtime.certs import CERT_FILE, KEY_FILE, self_signed
from controller.runtime.manager import Manager
from tests.clients import controller_client

from .inprocess import Running, cluster_with_crds, manager_config
from .manifests_support import NAMESPACE, apply_rbac, refused, rendered, service_account_client  # noqa: F401
from .subprocesses import until

READER = "genericjob-metrics-reader"


@pytest.fixture
async def cluster():
    async with cluster_with_crds() as running:
        yield running


def bind_reader(cluster, namespace: str, account: str) -> None:
    """A ClusterRoleBinding of user-rbac.yaml's metrics reader to a ServiceAccount (as Prometheus's)."""
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": f"{account}-reads-metrics"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": READER},
               "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]}
    cluster.api.create(cluster.registry.by_kind("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), None, binding)


class Scraper:
    def __init__(self, address: str) -> None:
        self.url = f"https://{address}/metrics"
        # The certificate is self-signed: as Prometheus's insecureSkipVerify, the token is what protects the page.
        self.tls = ssl.create_default_context()
        self.tls.check_hostname, self.tls.verify_mode = False, ssl.CERT_NONE

    async def get(self, token: str | None) -> tuple[int, str]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with aiohttp.ClientSession() as session, session.get(self.url, headers=headers, ssl=self.tls) as got:
            return got.status, await got.text()


@contextlib.asynccontextmanager
async def serving(rest_client, **config) -> AsyncIterator[tuple[Running, Scraper]]:
    """A Manager serving secure metrics, ready; and a scraper of its /metrics."""
    running = Running(Manager(rest_client, dataclasses.replace(manager_config(), metrics_secure=True, **config)))
    try:
        await running.start()
        await running.answers("/readyz", 200)
        yield running, Scraper(running.manager.server.addresses["metrics"])
    finally:
        await running.close()


def reviews(cluster) -> int:
    return sum(n for (_, resource, _), n in cluster.faults.requests.items()
               if resource in ("tokenreviews", "subjectaccessreviews"))


@pytest.mark.runner("scripted")
async def test_metrics_need_a_token_the_api_server_allows(cluster, rendered):  # noqa: F811
    apply_rbac(cluster, rendered)  # user-rbac.yaml's reader role included
    bind_reader(cluster, "monitoring", "prometheus")
    allowed = cluster.service_account_token("monitoring", "prometheus")
    denied = cluster.service_account_token("monitoring", "someone-else")
    async with service_account_client(cluster) as api_client, controller_client(api_client) as rest_client, \
            serving(rest_client) as (running, scraper):
        status, page = await scraper.get(allowed)
        assert status == 200 and "controller_runtime_reconcile_total" in page
        assert await scraper.get(None) == (401, "Unauthorized\n")
        assert (await scraper.get("not-a-token"))[0] == 401
        status, text = await scraper.get(denied)
        assert status == 403 and "system:serviceaccount:monitoring:someone-else" in text
        # Answers are cached: a second scrape costs the API server no review.
        before = reviews(cluster)
        assert (await scraper.get(allowed))[0] == 200
        assert reviews(cluster) == before
        # Plain HTTP on the metrics port is not served.
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.ClientError):
                await session.get(scraper.url.replace("https://", "http://"))
        # The health endpoints stay plain HTTP for the kubelet's probes.
        assert (await running.get("/healthz"))[0] == 200
    assert not refused(cluster), f"the controller's own requests were refused: {refused(cluster)}"


@pytest.mark.runner("scripted")
async def test_a_review_the_controller_may_not_make_is_a_500_not_a_pass(cluster, rendered):  # noqa: F811
    # The controller's account without the tokenreviews rule: no scrape gets through, and none is let in.
    objects = copy.deepcopy(rendered)
    for obj in objects:
        if obj["kind"] == "ClusterRole" and obj["metadata"]["name"] == "genericjob-controller":
            obj["rules"] = [r for r in obj["rules"] if "tokenreviews" not in r["resources"]]
    apply_rbac(cluster, objects)
    bind_reader(cluster, "monitoring", "prometheus")
    token = cluster.service_account_token("monitoring", "prometheus")
    async with service_account_client(cluster) as api_client, controller_client(api_client) as rest_client, \
            serving(rest_client) as (_, scraper):
        status, _ = await until(lambda: scraper.get(token), what="a scrape answered")
        assert status == 500


async def test_a_certificate_directory_is_served(tmp_path, rest_client):
    cert, key = self_signed("metrics.example")
    (tmp_path / CERT_FILE).write_bytes(cert)
    (tmp_path / KEY_FILE).write_bytes(key)
    async with serving(rest_client, metrics_cert_dir=str(tmp_path)) as (_, scraper):
        host, port = scraper.url.removeprefix("https://").removesuffix("/metrics").rsplit(":", 1)
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port), ssl=scraper.tls), 10)
        try:
            served = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        finally:
            writer.close()
        assert served == ssl.PEM_cert_to_DER_cert(cert.decode())


async def served_certificate(scraper: Scraper) -> bytes:
    """The certificate a new TLS connection to the metrics port is given (DER)."""
    host, port = scraper.url.removeprefix("https://").removesuffix("/metrics").rsplit(":", 1)
    _, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port), ssl=scraper.tls), 10)
    try:
        return writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()


def write_pair(directory, cert: bytes, key: bytes) -> None:
    """As the kubelet updates a Secret volume: the new files written aside, then swapped in by rename."""
    for name, data in ((CERT_FILE, cert), (KEY_FILE, key)):
        (directory / f".{name}.new").write_bytes(data)
        (directory / f".{name}.new").replace(directory / name)


def der(cert: bytes) -> bytes:
    return ssl.PEM_cert_to_DER_cert(cert.decode())


async def test_a_renewed_certificate_is_served_without_a_restart(tmp_path, rest_client):
    """As controller-runtime's certwatcher: the files re-read on an interval, new connections get the new
    certificate, the server (and the manager) never restarted; a pair that does not load is not served."""
    first, renewed = self_signed("metrics.example"), self_signed("metrics.example")
    write_pair(tmp_path, *first)
    async with serving(rest_client, metrics_cert_dir=str(tmp_path), metrics_cert_poll=0.05) as (running, scraper):
        assert await served_certificate(scraper) == der(first[0])
        task, address = running.task, scraper.url
        write_pair(tmp_path, *renewed)
        assert await until(lambda: _is(served_certificate(scraper), der(renewed[0])), what="the renewed certificate")
        # A key that does not match the certificate (a half-done renewal): the last good pair stays served.
        watcher_errors = ("certwatcher_read_certificate_errors_total", {})
        before = running.manager.registry.get_sample_value(*watcher_errors) or 0
        write_pair(tmp_path, first[0], renewed[1])
        await until(lambda: (running.manager.registry.get_sample_value(*watcher_errors) or 0) > before,
                    what="the mismatched pair refused")
        assert await served_certificate(scraper) == der(renewed[0])
        # And the next good pair is taken.
        write_pair(tmp_path, *first)
        assert await until(lambda: _is(served_certificate(scraper), der(first[0])), what="the first pair again")
        assert running.task is task and not task.done() and scraper.url == address  # no restart
        assert running.manager.registry.get_sample_value("certwatcher_read_certificate_total") > 0


async def _is(served, expected: bytes) -> bool:
    return await served == expected


async def test_a_certificate_directory_without_the_key_exits_1_saying_so(tmp_path, rest_client):
    (tmp_path / CERT_FILE).write_bytes(self_signed()[0])
    config = dataclasses.replace(manager_config(), metrics_secure=True, metrics_cert_dir=str(tmp_path))
    manager = Manager(rest_client, config)
    assert await manager.run() == 1
    assert manager.exit_reason == "cannot serve metrics"
