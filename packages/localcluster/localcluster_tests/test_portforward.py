"""`kubectl port-forward` against the process runner: a pod's port, reached through a local one.

kubectl 1.35 tunnels SPDY/3.1 through a WebSocket (`SPDY/3.1+portforward.k8s.io`); the real kubectl
is run, so localcluster is held to what it sends and expects. Ports are picked by the system: the
pod's server binds port 0 and prints its port, kubectl forwards from a local port it picks.
"""

from __future__ import annotations

import asyncio
import re
import socket
import struct
import sys
import zlib

import aiohttp
import pytest

from localcluster.kubelet import spdy
from localcluster.kubelet.pod_connect import MAX_MESSAGE_BYTES
from localcluster.kubelet.portforward import MAX_BUFFERED, MAX_STREAMS, PROTOCOL, declared_ports
from localcluster.testing import Kubectl

from .process_runner_support import log_contains, process_pod, running, wait_pod
from .rest import connect

pytestmark = pytest.mark.runner("process")


def free_port() -> int:
    """A port nothing listens on once the probe is closed."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def declaring(body: dict, *ports: int) -> dict:
    """The pod with its container declaring `ports` (only those are forwarded)."""
    body["spec"]["containers"][0]["ports"] = [{"containerPort": port} for port in ports]
    return body


async def web_server(core, tmp_path, name: str = "web", host_network: bool = False, declare: bool = True) -> int:
    """A pod serving tmp_path over HTTP on 127.0.0.1 (the pod's own address, moved there by the pod network's
    shim, or the host's with `host_network`), on a port it declares (unless not `declare`); that port."""
    (tmp_path / "index.html").write_text("served from the pod\n")
    port = free_port()
    body = process_pod(name, sys.executable, "-u", "-m", "http.server", str(port), "--bind", "127.0.0.1",
                       "--directory", str(tmp_path))
    body["spec"]["hostNetwork"] = host_network
    await core.create_namespaced_pod("default", declaring(body, port) if declare else body)
    await wait_pod(core, name, running)
    line = await log_contains(core, name, "Serving HTTP")
    assert int(re.search(r"port (\d+)", line)[1]) == port
    return port


async def test_port_forward_reaches_a_replicas_port(cluster, core, tmp_path):
    kubectl = Kubectl(cluster, tmp_path)
    port = await web_server(core, tmp_path)
    async with kubectl.stream("port-forward", "--address", "127.0.0.1", "pod/web", f":{port}") as lines:
        forwarding = await lines.until(rf"Forwarding from 127\.0\.0\.1:\d+ -> {port}")
        local = int(re.search(r":(\d+) ->", forwarding)[1])
        async with aiohttp.ClientSession() as session:
            for _ in range(3):  # each connection is a pair of streams of its own
                async with session.get(f"http://127.0.0.1:{local}/index.html") as response:
                    assert response.status == 200
                    assert await response.text() == "served from the pod\n"
        await lines.until(f"Handling connection for {local}")


async def test_port_forward_to_a_closed_port_reports_the_refusal(cluster, core, tmp_path):
    kubectl = Kubectl(cluster, tmp_path)
    closed = free_port()
    await core.create_namespaced_pod("default", declaring(process_pod("idle", "sleep", "60"), closed))
    pod = await wait_pod(core, "idle", running)
    async with kubectl.stream("port-forward", "--address", "127.0.0.1", "pod/idle", f":{closed}") as lines:
        forwarding = await lines.until(rf"Forwarding from 127\.0\.0\.1:\d+ -> {closed}")
        local = int(re.search(r":(\d+) ->", forwarding)[1])
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.ClientError):
                async with session.get(f"http://127.0.0.1:{local}/"):
                    pass
        assert lines.proc.stderr is not None
        err = (await asyncio.wait_for(lines.proc.stderr.read(), 10)).decode()  # kubectl gives up on the pod
    assert (f"error forwarding port {closed} to pod default/idle, uid {pod.metadata.uid}: failed to connect to "
            f"localhost:{closed} inside namespace of the pod: dial tcp4 {pod.status.pod_ip}:{closed}: connect: "
            f"connection refused") in err
    assert "lost connection to pod" in err


async def test_port_forward_to_an_undeclared_port_is_refused_on_the_error_stream(cluster, core, tmp_path):
    """Pods on the host's network share its ports: a port the pod does not declare (here another pod's,
    listening) is refused as a failed forward, and kubectl says why; the declared port of the same pod still
    works."""
    kubectl = Kubectl(cluster, tmp_path)
    (tmp_path / "other").mkdir()
    other = await web_server(core, tmp_path / "other", "other", host_network=True)  # not a port of `web`
    port = await web_server(core, tmp_path, "web", host_network=True)
    pod = await core.read_namespaced_pod("web", "default")
    async with kubectl.stream("port-forward", "--address", "127.0.0.1", "pod/web", f":{port}") as lines:
        forwarding = await lines.until(rf"Forwarding from 127\.0\.0\.1:\d+ -> {port}")
        local = int(re.search(r":(\d+) ->", forwarding)[1])
        async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{local}/") as response:
            assert response.status == 200
    async with kubectl.stream("port-forward", "--address", "127.0.0.1", "pod/web", f":{other}") as lines:
        forwarding = await lines.until(rf"Forwarding from 127\.0\.0\.1:\d+ -> {other}")
        local = int(re.search(r":(\d+) ->", forwarding)[1])
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.ClientError):
                async with session.get(f"http://127.0.0.1:{local}/"):
                    pass
        assert lines.proc.stderr is not None
        err = (await asyncio.wait_for(lines.proc.stderr.read(), 10)).decode()
    assert (f"error forwarding port {other} to pod default/web, uid {pod.metadata.uid}: port {other} is not a "
            f"declared container port of the pod") in err
    assert "lost connection to pod" in err
    assert "served from the pod" not in err


async def test_a_pod_with_its_own_address_has_every_port_forwarded(cluster, core, tmp_path):
    """On the pod network only the pod listens at its address: any port of it is forwarded, as a kubelet does."""
    kubectl = Kubectl(cluster, tmp_path)
    port = await web_server(core, tmp_path, "web", declare=False)
    async with kubectl.stream("port-forward", "--address", "127.0.0.1", "pod/web", f":{port}") as lines:
        forwarding = await lines.until(rf"Forwarding from 127\.0\.0\.1:\d+ -> {port}")
        local = int(re.search(r":(\d+) ->", forwarding)[1])
        async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{local}/") as response:
            assert response.status == 200


def test_only_declared_tcp_ports_are_forwarded():
    pod = {"spec": {"initContainers": [{"name": "sidecar", "ports": [{"containerPort": 9000}]}],
                    "containers": [{"name": "a", "ports": [{"containerPort": 8080}, {"containerPort": 53,
                                                                                     "protocol": "UDP"}]},
                                   {"name": "b"}]}}
    assert declared_ports(pod) == {8080, 9000}
    assert declared_ports({"spec": {"containers": [{"name": "a"}]}}) == frozenset()


def syn_stream(compressor, stream_id: int, **headers: str) -> bytes:
    """A SYN_STREAM as spdystream writes it (headers zlib-compressed with the SPDY/3 dictionary)."""
    raw = struct.pack(">I", len(headers)) + b"".join(
        struct.pack(">I", len(k)) + k.encode() + struct.pack(">I", len(v)) + v.encode() for k, v in headers.items())
    block = compressor.compress(raw) + compressor.flush(zlib.Z_SYNC_FLUSH)
    payload = struct.pack(">IIBB", stream_id, 0, 0, 0) + block
    return struct.pack(">HHI", 0x8003, spdy.SYN_STREAM, len(payload)) + payload


def spdy_compressor():
    return zlib.compressobj(9, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY, zdict=spdy.DICTIONARY)


async def idle_pod(core) -> None:
    await core.create_namespaced_pod("default", process_pod("idle", "sleep", "60"))
    await wait_pod(core, "idle", running)


PORTFORWARD = "/api/v1/namespaces/default/pods/idle/portforward"


async def test_an_oversized_port_forward_message_closes_the_connection_and_the_server_goes_on(cluster, core):
    await idle_pod(core)
    async with connect(cluster) as rest:
        async with rest.websocket(PORTFORWARD, (PROTOCOL,)) as ws:
            await ws.send_bytes(bytes(MAX_MESSAGE_BYTES + 1))
            closing = await asyncio.wait_for(ws.receive(), 10)
            assert (closing.type, closing.data) == (aiohttp.WSMsgType.CLOSE, aiohttp.WSCloseCode.MESSAGE_TOO_BIG)
        async with rest.websocket(PORTFORWARD, (PROTOCOL,)) as ws:  # the server still serves: a PING is echoed
            framer = spdy.Framer()
            await ws.send_bytes(framer.ping(7))
            (echo,) = framer.feed(await asyncio.wait_for(ws.receive_bytes(), 10))
            assert (echo.kind, echo.status) == (spdy.PING, 7)


async def test_a_port_forward_session_holds_a_bounded_number_of_streams(cluster, core):
    await idle_pod(core)
    async with connect(cluster) as rest, rest.websocket(PORTFORWARD, (PROTOCOL,)) as ws:
        compressor, framer = spdy_compressor(), spdy.Framer()
        # error streams waiting for their data stream: each is held until its pair is complete
        opened = [syn_stream(compressor, 2 * i + 1, streamtype="error", port="80", requestid=str(i))
                  for i in range(MAX_STREAMS + 1)]
        await ws.send_bytes(b"".join(opened))
        replies: list = []
        while len(replies) < MAX_STREAMS + 1:
            replies += framer.feed(await asyncio.wait_for(ws.receive_bytes(), 10))
    assert [f.kind for f in replies] == [spdy.SYN_REPLY] * MAX_STREAMS + [spdy.RST_STREAM]
    assert replies[-1].stream_id == 2 * MAX_STREAMS + 1


async def test_bytes_no_connection_will_take_are_bounded_by_resetting_their_stream(cluster, core):
    """A data stream whose error stream never comes is forwarded nowhere: past MAX_BUFFERED bytes it is reset,
    rather than the server holding whatever the client sends; the session goes on."""
    await idle_pod(core)
    async with connect(cluster) as rest, rest.websocket(PORTFORWARD, (PROTOCOL,)) as ws:
        compressor, framer = spdy_compressor(), spdy.Framer()
        await ws.send_bytes(syn_stream(compressor, 1, streamtype="data", port="80", requestid="0"))
        (reply,) = framer.feed(await asyncio.wait_for(ws.receive_bytes(), 10))
        assert (reply.kind, reply.stream_id) == (spdy.SYN_REPLY, 1)
        chunk = framer.data(1, bytes(32 * 1024))
        for _ in range(MAX_BUFFERED // (32 * 1024) + 1):
            await ws.send_bytes(chunk)
        await ws.send_bytes(framer.ping(9))
        answers: list = []
        while not any(f.kind == spdy.PING for f in answers):
            answers += framer.feed(await asyncio.wait_for(ws.receive_bytes(), 10))
    assert [(f.kind, f.stream_id) for f in answers] == [(spdy.RST_STREAM, 1), (spdy.PING, 0)]


def test_spdy_frames_and_header_blocks_are_bounded():
    with pytest.raises(spdy.ProtocolError, match="more than 1024"):
        spdy.Framer(max_length=1024).feed(struct.pack(">II", 1, 1025))  # a DATA frame's header is enough
    bomb = syn_stream(spdy_compressor(), 1, streamtype="data", port="1", requestid="x" * (spdy.MAX_HEADERS + 1))
    assert len(bomb) < 1024  # a few bytes that inflate past the bound
    with pytest.raises(spdy.ProtocolError, match="header block"):
        spdy.Framer().feed(bomb)


def test_spdy_frames_round_trip():
    """A SYN_STREAM as spdystream writes it (headers zlib-compressed with the SPDY/3 dictionary) is read,
    whole or in pieces, and what the server writes back reads by the same rules."""
    client = zlib.compressobj(9, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY, zdict=spdy.DICTIONARY)
    pairs = [("streamtype", "data"), ("port", "8080"), ("requestid", "0")]
    raw = struct.pack(">I", len(pairs)) + b"".join(
        struct.pack(">I", len(k)) + k.encode() + struct.pack(">I", len(v)) + v.encode() for k, v in pairs)
    block = client.compress(raw) + client.flush(zlib.Z_SYNC_FLUSH)
    payload = struct.pack(">IIBB", 1, 0, 0, 0) + block
    syn_stream = struct.pack(">HHI", 0x8003, spdy.SYN_STREAM, len(payload)) + payload
    server = spdy.Framer()
    assert server.feed(syn_stream[:5]) == []  # a frame split across messages waits for its end
    (syn,) = server.feed(syn_stream[5:])
    assert (syn.kind, syn.stream_id, syn.headers) == (spdy.SYN_STREAM, 1, {k: [v] for k, v in pairs})

    written = server.syn_reply(1) + server.data(1, b"x" * 70_000) + server.data(1, b"", fin=True) + server.ping(7)
    reply, *data, fin, ping = spdy.Framer().feed(written)
    assert (reply.kind, reply.stream_id, reply.headers) == (spdy.SYN_REPLY, 1, {})
    assert [len(d.data) for d in data] == [spdy.MAX_DATA, spdy.MAX_DATA, 70_000 - 2 * spdy.MAX_DATA]
    assert not any(d.fin for d in data) and (fin.kind, fin.data, fin.fin) == (0, b"", True)
    assert (ping.kind, ping.status) == (spdy.PING, 7)
