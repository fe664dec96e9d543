"""The write connections (kubeclient/http1.py) trust no server: scripted servers that write exact bytes send
answers nobody asked for, interim answers, endless headers, bodies that end with the connection, and close
connections with a request unanswered; the client drops, skips, caps, reads, or repeats only what is safe."""

from __future__ import annotations

import asyncio
import resource

import pytest
from kubernetes_asyncio import client

from apimachinery.resource import Resource
from controller.runtime.client import KubeClient
from kubeclient import http1
from kubeclient.from_configuration import settings_from_configuration
from kubeclient.http1 import MAX_HEAD, MAX_LINE, Http1Pool
from kubeclient.rest import RestClient
from localcluster.testing import until
from tests.kubeclient.scripted import (
    OK,
    Scripted,
    answer_forever,
    answer_once_then_drop_the_next,
    answer_with,
    drop_unanswered,
)

JOBS = Resource("example.org", "v1", "genericjobs")
UNASKED = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged"


def answer(status: bytes, body: bytes, *headers: bytes) -> bytes:
    return b"HTTP/1.1 %s\r\n%sContent-Length: %d\r\n\r\n%s" % (status, b"".join(h + b"\r\n" for h in headers),
                                                                len(body), body)


# --- answers nobody asked for ---------------------------------------------------------------------------


@pytest.mark.parametrize("after", [UNASKED, UNASKED[:30], b"x"], ids=["an answer", "part of one", "garbage"])
async def test_bytes_after_an_answer_drop_the_connection(after):
    server = Scripted(answer_with(OK + after, answer(b"202 Accepted", b"unasked")), answer_forever)
    async with server as url:
        pool = Http1Pool(url)
        assert (await pool.request("POST", "/a", {}, b"1", timeout=5)).body == b'{"made":1}\n'  # kept: it came whole
        assert pool.open_connections == 0
        second = await pool.request("POST", "/b", {}, b"2", timeout=5)
        assert (second.status, second.body) == (201, b'{"made":1}\n')  # not "forged", not the first's 202
        await pool.close()
    assert server.connections == 2 and server.paths() == [b"POST /a", b"POST /b"]


async def test_bytes_on_an_idle_connection_drop_it():
    answered = asyncio.Event()

    async def speaks_out_of_turn(server, reader, writer):
        await server.read_request(reader)
        writer.write(OK)
        await answered.wait()
        writer.write(UNASKED)  # the client asked nothing since
        await reader.read()

    server = Scripted(speaks_out_of_turn, answer_forever)
    async with server as url:
        pool = Http1Pool(url)
        await pool.request("GET", "/a", {}, None, timeout=5)
        answered.set()
        await until(lambda: all(c.closed for c in pool._idle))
        assert (await pool.request("GET", "/b", {}, None, timeout=5)).body == b'{"made":1}\n'
        await pool.close()
    assert server.connections == 2


# --- interim answers ------------------------------------------------------------------------------------


async def test_interim_answers_are_skipped_and_the_connection_kept():
    interim = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
    server = Scripted(answer_with(interim + OK, b"HTTP/1.1 100 Continue\r\nRetry-After: 9\r\n\r\n" + OK))
    async with server as url:
        pool = Http1Pool(url)
        first = await pool.request("POST", "/a", {}, b"1", timeout=5)
        assert (first.status, first.reason, first.body) == (201, "Created", b'{"made":1}\n')
        second = await pool.request("POST", "/b", {}, b"2", timeout=5)
        assert (second.status, second.retry_after) == (201, None)  # the interim answer's headers are not the final's
        await pool.close()
    assert server.connections == 1


async def test_switching_protocols_is_an_error():
    switch = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    async with Scripted(answer_with(switch + OK)) as url:
        pool = Http1Pool(url)
        with pytest.raises(ConnectionError, match="switched protocols"):
            await pool.request("GET", "/a", {}, None, timeout=5)
        assert pool.open_connections == 0
        await pool.close()


# --- header bytes ---------------------------------------------------------------------------------------


async def test_a_header_line_is_at_most_8190_bytes():
    longest = b"X-Long: " + b"v" * (MAX_LINE - len(b"X-Long: "))
    async with Scripted(answer_with(answer(b"200 OK", b"ok", longest), answer(b"200 OK", b"ok", longest + b"v"))
                        ) as url:
        pool = Http1Pool(url)
        assert (await pool.request("GET", "/a", {}, None, timeout=5)).body == b"ok"
        with pytest.raises(ConnectionError, match=f"a header line over {MAX_LINE} bytes"):
            await pool.request("GET", "/b", {}, None, timeout=5)
        await pool.close()


async def test_the_headers_of_an_exchange_are_at_most_64_kib_interim_answers_included():
    many = [b"X-%d: %s" % (i, b"v" * 1000) for i in range(MAX_HEAD // 1000 + 1)]  # each short; together too long
    interim = b"HTTP/1.1 103 Early Hints\r\n%s\r\n\r\n" % b"\r\n".join(many[: len(many) // 2])
    for script in (answer_with(answer(b"200 OK", b"ok", *many)),  # one write: the whole head in one read
                   answer_with(interim * 3 + answer(b"200 OK", b"ok"))):
        async with Scripted(script) as url:
            pool = Http1Pool(url)
            with pytest.raises(ConnectionError, match=f"over {MAX_HEAD} bytes of headers"):
                await pool.request("GET", "/", {}, None, timeout=5)
            await pool.close()


@pytest.mark.parametrize("piece", [None, 1000], ids=["one write", "1000-byte writes"])
async def test_long_headers_and_bodies_within_the_caps_are_read_whole(piece):
    near = [b"X-%d: %s" % (i, b"v" * 1000) for i in range((MAX_HEAD - 2000) // 1010)]  # just within 64 KiB
    body = bytes(range(256)) * 400  # 100 KiB
    answers = [answer(b"200 OK", body), answer(b"200 OK", body, *near),
               b"HTTP/1.1 103 Early Hints\r\n" + near[0] + b"\r\n\r\n" + answer(b"200 OK", body, near[1]),
               answer(b"200 OK", b"ok", b"X-Long: " + b"v" * (MAX_LINE - 8))]

    async def in_pieces(server, reader, writer):
        for whole in answers:
            await server.read_request(reader)
            for at in range(0, len(whole), piece or len(whole)):
                writer.write(whole[at:at + (piece or len(whole))])
                await writer.drain()
        await reader.read()

    server = Scripted(in_pieces)
    async with server as url:
        pool = Http1Pool(url)
        for expected in (body, body, body, b"ok"):
            assert (await pool.request("GET", "/", {}, None, timeout=5)).body == expected
        await pool.close()
    assert server.connections == 1


async def test_a_long_line_that_comes_in_short_reads_is_refused():
    async def a_line_in_pieces(server, reader, writer):
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nX-Long: ")
        for _ in range(3):
            await writer.drain()
            writer.write(b"v" * 3000)  # each read short; the line, 9000 bytes and unfinished, too long
        await reader.read()

    async with Scripted(a_line_in_pieces) as url:
        pool = Http1Pool(url)
        with pytest.raises(ConnectionError, match=f"a header line over {MAX_LINE} bytes"):
            await pool.request("GET", "/", {}, None, timeout=5)
        await pool.close()


@pytest.mark.parametrize(("start", "endless", "error"), [
    (b"HTTP/1.1 200 OK\r\nX-Big: ", b"v" * 65536, f"a header line over {MAX_LINE} bytes"),
    (b"HTTP/1.1 200 OK\r\n", b"X-Again: v\r\n" * 5000, f"over {MAX_HEAD} bytes of headers"),
    (b"", b"HTTP/1.1 100 Continue\r\n\r\n" * 2500, f"over {MAX_HEAD} bytes of headers")],
    ids=["one line", "many lines", "interim answers"])
async def test_200_mib_of_headers_fail_fast_without_the_client_growing(start, endless, error):
    sent = 0

    async def endless_headers(server, reader, writer):
        nonlocal sent
        await server.read_request(reader)
        writer.write(start)
        while sent < 200 * 1024 * 1024:
            writer.write(endless)
            sent += len(endless)
            await writer.drain()  # ConnectionResetError once the client gives up

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    async with Scripted(endless_headers) as url:
        pool = Http1Pool(url)
        with pytest.raises(ConnectionError, match=error):
            await pool.request("GET", "/", {}, None, timeout=20)
        await pool.close()
    # What the server could write before the client dropped it: the cap, a read, the sockets' buffers; not 200 MiB.
    assert sent < 24 * 1024 * 1024
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 32 * 1024


# --- bodies that end with the connection ----------------------------------------------------------------


@pytest.mark.parametrize("head", [b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n", b"HTTP/1.0 200 OK\r\n\r\n",
                                  b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\n"])
async def test_a_body_delimited_by_the_close_is_read_to_the_end(head):
    async def until_close(server, reader, writer):
        await server.read_request(reader)
        writer.write(head + b"part one, ")
        await writer.drain()
        writer.write(b"part two")
        await writer.drain()
        writer.write_eof()
        await reader.read()

    server = Scripted(until_close, answer_forever)
    async with server as url:
        pool = Http1Pool(url)
        reply = await pool.request("GET", "/a", {}, None, timeout=5)
        assert (reply.status, reply.body) == (200, b"part one, part two")
        assert pool.open_connections == 0  # done: never reused
        assert (await pool.request("GET", "/b", {}, None, timeout=5)).status == 201
        await pool.close()
    assert server.connections == 2


@pytest.mark.parametrize("cut", [b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
                                 b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
                                 b"HTTP/1.1 200 OK\r\nContent-Le"])
async def test_an_answer_cut_short_by_the_close_is_an_error(cut):
    async def cut_short(server, reader, writer):
        await server.read_request(reader)
        writer.write(cut)
        await writer.drain()  # then closed

    async with Scripted(cut_short) as url:
        pool = Http1Pool(url)
        with pytest.raises(ConnectionError, match="closed the connection"):
            await pool.request("GET", "/", {}, None, timeout=5)
        await pool.close()


# --- what is sent again ---------------------------------------------------------------------------------


async def test_a_written_post_lost_unanswered_is_never_sent_again():
    server = Scripted(answer_once_then_drop_the_next, answer_forever)
    async with server as url:
        pool = Http1Pool(url)
        await pool.request("POST", "/a", {}, b"1", timeout=5)
        with pytest.raises(ConnectionError):
            await pool.request("POST", "/b", {}, b"2", timeout=5)
        await pool.close()
    assert server.paths() == [b"POST /a", b"POST /b"] and server.connections == 1


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
async def test_a_request_declared_idempotent_is_sent_again_once_on_a_new_connection(method):
    server = Scripted(answer_once_then_drop_the_next, answer_forever)
    async with server as url:
        pool = Http1Pool(url)
        await pool.request(method, "/a", {}, b"1", timeout=5, idempotent=True)
        assert (await pool.request(method, "/b", {}, b"2", timeout=5, idempotent=True)).status == 201
        await pool.close()
    assert server.paths() == [f"{method} /{p}".encode() for p in "abb"] and server.connections == 2


async def test_an_idempotent_request_is_not_repeated_once_its_answer_began_or_on_a_new_connection():
    async def half_an_answer(server, reader, writer):
        await server.read_request(reader)
        writer.write(OK)
        await server.read_request(reader)
        writer.write(OK[:20])
        await writer.drain()

    for scripts, first in (((half_an_answer, answer_forever), True), ((drop_unanswered, answer_forever), False)):
        server = Scripted(*scripts)
        async with server as url:
            pool = Http1Pool(url)
            if first:
                await pool.request("GET", "/a", {}, None, timeout=5, idempotent=True)
            with pytest.raises(ConnectionError):
                await pool.request("GET", "/b", {}, None, timeout=5, idempotent=True)
            await pool.close()
        assert server.paths().count(b"GET /b") == 1 and server.connections == 1


async def test_an_idle_connection_the_server_closed_is_not_written_to():
    async def answer_once_and_close(server, reader, writer):
        await server.read_request(reader)
        writer.write(OK)
        await writer.drain()  # then closed, as a server's keep-alive timeout closes an idle connection

    server = Scripted(answer_once_and_close)
    async with server as url:
        pool = Http1Pool(url)
        await pool.request("POST", "/a", {}, b"1", timeout=5)
        await until(lambda: all(c.closed for c in pool._idle))
        assert (await pool.request("POST", "/b", {}, b"2", timeout=5)).status == 201
        await pool.close()
    assert server.connections == 2 and server.paths() == [b"POST /a", b"POST /b"]


async def test_a_connection_idle_too_long_is_not_reused(monkeypatch):
    server = Scripted(answer_forever)
    async with server as url:
        pool = Http1Pool(url)
        await pool.request("POST", "/a", {}, b"1", timeout=5)
        await pool.request("POST", "/b", {}, b"2", timeout=5)
        monkeypatch.setattr(http1, "IDLE_TIMEOUT", 0.0)
        await pool.request("POST", "/c", {}, b"3", timeout=5)
        assert pool.open_connections == 1
        await pool.close()
    assert server.connections == 2


async def test_kubeclient_repeats_only_what_a_second_copy_cannot_harm():
    """Its GET, its status PUT (a resourceVersion) and a delete with a uid are sent again; a create, a patch and a
    delete without a uid are not: the caller gets the ConnectionError, and its reconcile is retried."""
    job = {"apiVersion": "example.org/v1", "kind": "GenericJob",
           "metadata": {"name": "j", "namespace": "ns", "resourceVersion": "7", "uid": "u1"}, "spec": {}}
    calls = {"get": lambda kube: kube.get("pods", "ns", "p"),
             "delete with a uid": lambda kube: kube.delete("pods", "ns", "p", uid="u1"),
             "force delete": lambda kube: kube.force_delete("pods", "ns", "p", uid="u1"),
             "status update": lambda kube: kube.replace_status(JOBS, job, {"phase": "Running"}),
             "create": lambda kube: kube.create("pods", {"metadata": {"name": "p", "namespace": "ns"}}),
             "patch": lambda kube: kube.patch("pods", "ns", "p", {"metadata": {"labels": {"a": "b"}}}),
             "delete without a uid": lambda kube: kube.delete("pods", "ns", "p")}
    for name, call in calls.items():
        server = Scripted(answer_once_then_drop_the_next, answer_forever)
        async with server as url:
            async with RestClient(settings_from_configuration(client.Configuration(host=url))) as api:
                kube = KubeClient(api, qps=0)
                await kube.get("pods", "ns", "warm-up")
                repeated = name not in ("create", "patch", "delete without a uid")
                if repeated:
                    await call(kube)
                else:
                    with pytest.raises(ConnectionError):
                        await call(kube)
        assert len(server.requests) == (3 if repeated else 2), name

