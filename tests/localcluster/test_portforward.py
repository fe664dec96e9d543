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

from localcluster import spdy

from .kubectl import Kubectl
from .test_process_runner import log_contains, process_pod, running, wait_pod

pytestmark = pytest.mark.runner("process")


async def web_server(core, tmp_path) -> int:
    """A pod serving tmp_path over HTTP on 127.0.0.1; its port."""
    (tmp_path / "index.html").write_text("served from the pod\n")
    body = process_pod("web", sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory",
                       str(tmp_path))
    await core.create_namespaced_pod("default", body)
    await wait_pod(core, "web", running)
    line = await log_contains(core, "web", "Serving HTTP")
    return int(re.search(r"port (\d+)", line)[1])


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
    await core.create_namespaced_pod("default", process_pod("idle", "sleep", "60"))
    pod = await wait_pod(core, "idle", running)
    with socket.socket() as probe:  # a port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
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
            f"localhost:{closed}, IPv4: dial tcp4 127.0.0.1:{closed}: connect: connection refused") in err
    assert "lost connection to pod" in err


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
