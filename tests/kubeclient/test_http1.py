"""The write client's keep-alive HTTP/1.1 connections (kubeclient/http1.py), over real sockets: against
localcluster (TLS, the API server's answers), and against scripted servers for what a real server or network does
now and then (answers chunked, says Connection: close, never answers, answers garbage). What a server must not be
trusted with (answers nobody asked for, interim answers, endless headers, lost requests): test_http1_untrusted.py."""

from __future__ import annotations

import asyncio
import ssl

import orjson
import pytest
from kubernetes_asyncio import client, config

from controller.runtime.client import ApiStatusError, KubeClient
from kubeclient import http1
from kubeclient.from_configuration import settings_from_configuration
from kubeclient.http1 import Http1Pool
from kubeclient.rest import RestClient
from localcluster.testing import until
from tests.kubeclient.scripted import OK, Scripted, answer_forever, answer_with, never_answer


async def test_requests_reuse_one_connection_and_send_exact_bytes():
    server = Scripted(answer_forever)
    async with server as url:
        pool = Http1Pool(url)
        for i in range(5):
            answer = await pool.request("POST", f"/api/v1/namespaces/ns/pods?n={i}", {"Accept": "application/json"},
                                        b'{"a":1}', timeout=5)
            assert (answer.status, answer.reason, answer.body) == (201, "Created", b'{"made":1}\n')
        await pool.close()
    assert server.connections == 1 and pool.open_connections == 0
    assert server.requests[0] == (b"POST /api/v1/namespaces/ns/pods?n=0 HTTP/1.1\r\nHost: " + url[7:].encode()
                                  + b"\r\nAccept: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}")


async def test_connection_close_and_chunked_answers():
    async def chunked_then_close(server, reader, writer):
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        await reader.read()

    server = Scripted(chunked_then_close, answer_forever)
    async with server as url:
        pool = Http1Pool(url)
        assert (await pool.request("GET", "/a", {}, None, timeout=5)).body == b"hello world"
        assert (await pool.request("GET", "/b", {}, None, timeout=5)).body == b"ok"
        assert pool.open_connections == 0  # Connection: close is honoured: never reused
        assert (await pool.request("GET", "/c", {}, None, timeout=5)).status == 201
        await pool.close()
    assert server.connections == 2


async def test_no_answer_within_the_timeout_names_the_server_and_drops_the_connection():
    server = Scripted(never_answer)
    async with server as url:
        pool = Http1Pool(url)
        with pytest.raises(TimeoutError, match=rf"no answer from {url} within 0.2 s \(PUT /x\)"):
            await pool.request("PUT", "/x", {}, b"{}", timeout=0.2)
        assert pool.open_connections == 0
        await pool.close()


async def test_a_cancelled_request_drops_its_connection():
    server = Scripted(never_answer)
    async with server as url:
        pool = Http1Pool(url)
        task = asyncio.ensure_future(pool.request("PUT", "/x", {}, b"{}", timeout=30))
        await until(lambda: server.requests)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert pool.open_connections == 0
        await pool.close()


async def test_at_most_limit_connections_are_open():
    release = asyncio.Event()
    busy = []

    async def slow(server, reader, writer):
        while True:
            await server.read_request(reader)
            busy.append(1)
            await release.wait()
            writer.write(OK)
            await writer.drain()

    server = Scripted(slow)
    async with server as url:
        pool = Http1Pool(url, limit=2)
        tasks = [asyncio.ensure_future(pool.request("GET", f"/{i}", {}, None, timeout=5)) for i in range(5)]
        await until(lambda: len(busy) == 2)
        assert server.connections == 2 and pool.open_connections == 2
        release.set()
        assert [a.status for a in await asyncio.gather(*tasks)] == [201] * 5
        await pool.close()
    assert server.connections == 2


async def test_malformed_and_oversized_answers_are_errors(monkeypatch):
    async def garbage(server, reader, writer):
        await server.read_request(reader)
        writer.write(b"this is not HTTP\r\n\r\n")
        await writer.drain()
        await reader.read()

    async with Scripted(garbage) as url:
        pool = Http1Pool(url)
        with pytest.raises(ConnectionError, match="malformed HTTP answer"):
            await pool.request("GET", "/", {}, None, timeout=5)
        await pool.close()
    monkeypatch.setattr(http1, "MAX_ANSWER", 10_000)
    async with Scripted(answer_with(b"HTTP/1.1 200 OK\r\nContent-Length: 20000\r\n\r\n" + b"x" * 20_000)) as url:
        pool = Http1Pool(url)
        with pytest.raises(ConnectionError, match="an answer over 10000 bytes"):
            await pool.request("GET", "/", {}, None, timeout=5)
        assert pool.open_connections == 0
        await pool.close()


async def test_no_line_break_can_be_smuggled_into_a_request():
    pool = Http1Pool("http://127.0.0.1:9")
    for path, headers in (("/a b", {}), ("/a\r\nX: y", {}), ("/a", {"X": "1\r\nEvil: 2"}), ("/a", {"X": "1\n"}),
                          ("/a", {"X": "ü"})):
        with pytest.raises(ValueError, match="line break, space or non-ASCII"):
            await pool.request("GET", path, headers, None, timeout=1)
    assert pool.open_connections == 0


async def test_a_refused_write_keeps_its_retry_after():
    async def too_many(server, reader, writer):
        await server.read_request(reader)
        body = orjson.dumps({"kind": "Status", "code": 429, "reason": "TooManyRequests", "message": "slow down"})
        writer.write(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: %d\r\n\r\n%s"
                     % (len(body), body))
        await writer.drain()
        await reader.read()

    async with Scripted(too_many) as url:
        async with RestClient(settings_from_configuration(client.Configuration(host=url))) as api:
            with pytest.raises(ApiStatusError) as raised:
                await KubeClient(api, qps=0).create("pods", {"metadata": {"name": "p", "namespace": "ns"}})
            assert api.write_pool.open_connections == 1  # over http1.py's connections
    assert (raised.value.code, raised.value.reason, raised.value.retry_after) == (429, "TooManyRequests", 3.0)


async def test_writes_to_localcluster_go_over_tls_on_one_connection(cluster):
    configuration = client.Configuration()
    await config.load_kube_config_from_dict(cluster.kubeconfig(), client_configuration=configuration)
    async with RestClient(settings_from_configuration(configuration)) as api:
        kube = KubeClient(api, qps=0)
        assert configuration.host.startswith("https://")
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
               "spec": {"containers": [{"name": "c", "image": "x"}]}}
        made = await kube.create("pods", pod)
        assert made["metadata"]["uid"]
        with pytest.raises(ApiStatusError) as raised:
            await kube.create("pods", pod)
        assert raised.value.code == 409 and raised.value.reason == "AlreadyExists"
        assert (await kube.get("pods", "default", "p"))["metadata"]["uid"] == made["metadata"]["uid"]
        await kube.delete("pods", "default", "p", uid=made["metadata"]["uid"])
        with pytest.raises(ApiStatusError) as raised:
            await kube.get("pods", "default", "p")
        assert raised.value.code == 404
        assert api.write_pool.open_connections == 1


async def test_a_server_certificate_the_ca_does_not_sign_is_refused(cluster):
    configuration = client.Configuration()
    await config.load_kube_config_from_dict(cluster.kubeconfig(), client_configuration=configuration)
    configuration.ssl_ca_cert = None  # the system's CAs, which never signed localcluster's certificate
    async with RestClient(settings_from_configuration(configuration)) as api:
        with pytest.raises(ssl.SSLCertVerificationError):
            await KubeClient(api, qps=0).get("pods", "default", "p")


async def test_with_a_proxy_the_writes_keep_aiohttps_path(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    async with RestClient(settings_from_configuration(client.Configuration(host="https://10.96.0.1:443"))) as api:
        assert api.proxy == "http://proxy.corp:3128" and api.write_pool is None


async def test_the_timeout_bounds_the_wait_for_a_connection_and_the_tls_handshake():
    server = Scripted(never_answer)
    async with server as url:
        pool = Http1Pool(url, limit=1)
        first = asyncio.ensure_future(pool.request("PUT", "/first", {}, b"{}", timeout=30))
        await until(lambda: server.requests)
        with pytest.raises(TimeoutError, match=r"within 0.2 s \(PUT /second\)"):
            await pool.request("PUT", "/second", {}, b"{}", timeout=0.2)  # waited for the only connection
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        await pool.close()

    async def silent(server, reader, writer):
        await reader.read()  # accepts the TCP connection, never answers the TLS ClientHello

    async with Scripted(silent) as url:
        pool = Http1Pool(url.replace("http://", "https://"), ssl.create_default_context())
        with pytest.raises(TimeoutError, match=r"within 0.2 s \(GET /\)"):
            await pool.request("GET", "/", {}, None, timeout=0.2)
        assert pool.open_connections == 0
        await pool.close()
