"""Credentials that stop working: tokens with an expiry or revoked, and x509 client certificates (the client CA
every cluster of the process trusts, CN = user, O = groups), expired or from another CA."""

from __future__ import annotations

import asyncio
import ssl
import time
from pathlib import Path

import aiohttp
import pytest

from localcluster.auth.client_certificates import ClientCa

WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


async def whoami(cluster, ssl_context: ssl.SSLContext, token: str | None = None) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ssl_context)) as session, \
            session.post(cluster.url + WHOAMI, json=REVIEW, headers=headers) as answer:
        return answer.status, await answer.json(content_type=None)


def with_certificate(cluster, tmp_path: Path, cert: bytes, key: bytes) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=cluster.certificate.decode())
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    context.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    return context


async def test_a_token_with_an_expiry_is_refused_once_expired(cluster):
    trusting = cluster.credentials.ssl_context
    token = cluster.add_token("short.lived", "robot", ["robots"], expires_in=1.0)
    status, review = await whoami(cluster, trusting, token)
    assert status == 201, review
    assert review["status"]["userInfo"]["username"] == "robot"
    deadline = time.monotonic() + 5
    while status == 201 and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        status, review = await whoami(cluster, trusting, token)
    assert status == 401 and review["reason"] == "Unauthorized"


async def test_a_revoked_token_is_refused(cluster):
    token = cluster.add_token("to.revoke", "robot")
    assert (await whoami(cluster, cluster.credentials.ssl_context, token))[0] == 201
    cluster.revoke_token(token)
    assert (await whoami(cluster, cluster.credentials.ssl_context, token))[0] == 401


async def test_the_admin_endpoint_issues_tokens_with_an_expiry_and_checks_it(cluster):
    async with cluster.session() as session:
        async with session.post(f"{cluster.url}/_localcluster/tokens",
                                json={"user": "robot", "expirationSeconds": 0}) as answer:
            assert answer.status == 400
        async with session.post(f"{cluster.url}/_localcluster/tokens",
                                json={"user": "robot", "expirationSeconds": 0.5}) as answer:
            token = (await answer.json())["token"]
    await asyncio.sleep(0.6)  # past the expiry: nothing to wait for but time itself
    assert (await whoami(cluster, cluster.credentials.ssl_context, token))[0] == 401


async def test_a_client_certificate_is_its_cn_in_its_organizations(cluster, tmp_path):
    cert, key = cluster.client_certificate("alice", ["team-a", "team-b"])
    status, review = await whoami(cluster, with_certificate(cluster, tmp_path, cert, key))
    assert status == 201, review
    info = review["status"]["userInfo"]
    assert info["username"] == "alice"
    assert info["groups"] == ["team-a", "team-b", "system:authenticated"]


async def test_without_certificate_or_token_a_request_is_anonymous(cluster):
    status, review = await whoami(cluster, cluster.credentials.ssl_context)
    assert status == 403 and 'User "system:anonymous"' in review["message"]


async def test_an_expired_client_certificate_is_401(cluster, tmp_path):
    cert, key = cluster.client_certificate("alice", lifetime=0.5)
    context = with_certificate(cluster, tmp_path, cert, key)
    await asyncio.sleep(1.1)  # certificate times have a resolution of a second
    status, review = await whoami(cluster, context)
    assert status == 401 and review["reason"] == "Unauthorized"
    # As the apiserver's union of authenticators: a valid token with it still authenticates.
    status, review = await whoami(cluster, context, cluster.add_token("t.alice", "bob"))
    assert status == 201 and review["status"]["userInfo"]["username"] == "bob"


async def test_a_certificate_from_another_ca_is_refused(cluster, tmp_path):
    cert, key = ClientCa("another-ca").issue("admin", ["system:masters"])
    with pytest.raises(aiohttp.ClientError):  # the handshake fails (the apiserver: 401; client_certificates.py)
        await whoami(cluster, with_certificate(cluster, tmp_path, cert, key))


async def test_the_admin_endpoint_issues_client_certificates(cluster, tmp_path):
    async with cluster.session() as session, \
            session.post(f"{cluster.url}/_localcluster/client-certificates",
                         json={"user": "carol", "groups": ["ops"], "lifetime": 60}) as answer:
        assert answer.status == 200
        issued = await answer.json()
    context = with_certificate(cluster, tmp_path, issued["certificate"].encode(), issued["key"].encode())
    status, review = await whoami(cluster, context)
    assert status == 201 and review["status"]["userInfo"]["username"] == "carol"
