"""Fuzzing localcluster's request decoding (issue 35): whatever a client sends, the answer is an API server's.

Hypothesis sends JSON, YAML and protobuf bodies (generated, and mutated from valid ones) to the writes
that decode them (create, replace, the four patch types, DELETE's options, TokenRequest, a review),
random query parameters to lists, watches and deletes, and SPDY frames to the port-forward framer and
WebSocket messages to a pod's exec and port-forward. Each request must answer within a timeout with
anything but a 5xx (a 500 is a bug: a real server answers 400 or 422 to what it cannot read), the
server must stay up (/healthz), and the process's peak memory may not grow by more than MAX_GROWTH.

CI runs a fixed, derandomized budget (EXAMPLES per test; the whole file well under a minute);
`LOCALCLUSTER_FUZZ_EXAMPLES=5000 LOCALCLUSTER_FUZZ_RANDOM=1` runs longer with fresh randomness.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import resource
import sys
import zlib

import aiohttp
import pytest
import pytest_asyncio
import yaml
from google.protobuf import json_format
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from localcluster import LocalCluster
from localcluster.endpoints import protobuf
from localcluster.endpoints.k8s_protobuf import KINDS
from localcluster.kubelet import spdy
from localcluster.testing import starts_processes, until

pytestmark = pytest.mark.asyncio(loop_scope="module")

EXAMPLES = int(os.environ.get("LOCALCLUSTER_FUZZ_EXAMPLES", "150"))
RANDOM = bool(os.environ.get("LOCALCLUSTER_FUZZ_RANDOM"))
FUZZ = settings(max_examples=EXAMPLES, derandomize=not RANDOM, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])
TIMEOUT = 10.0  # seconds for one request's answer (its headers: a watch may stream on)
MAX_GROWTH = 256 * 1024  # KiB of peak RSS a test may add
NS = "fuzz"
CONFIGMAPS = f"/api/v1/namespaces/{NS}/configmaps"
VALID = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "base", "labels": {"a": "b"}},
         "data": {"key": "value"}, "immutable": False}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
@starts_processes
async def cluster():
    async with LocalCluster(runner="process") as running:
        running.api.ensure_namespace(NS)
        yield running


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def http(cluster):
    headers = {**cluster.admin_headers, "User-Agent": "fuzz"}
    connector = aiohttp.TCPConnector(ssl=cluster.credentials.ssl_context, limit=4)
    async with aiohttp.ClientSession(headers=headers, connector=connector) as session:
        async with session.post(cluster.url + CONFIGMAPS, json=VALID) as r:
            assert r.status == 201, await r.text()
        yield session


@pytest.fixture
def memory():
    """Peak RSS may not grow by more than MAX_GROWTH over the test (a decoder that blows up shows here)."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    yield
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown < MAX_GROWTH, f"peak RSS grew by {grown} KiB"


async def send(http, cluster, method: str, path: str, body: bytes | None = None, content_type: str | None = None,
               query: list[tuple[str, str]] | None = None) -> int:
    """The answer's status; fails on a 5xx or no answer in TIMEOUT. Only an error's body is read (a watch
    that was opened keeps streaming: its connection is dropped)."""
    headers = {"Content-Type": content_type} if content_type else {}
    try:
        async with asyncio.timeout(TIMEOUT):
            async with http.request(method, cluster.url + path, data=body, headers=headers, params=query) as r:
                text = await r.text(errors="replace") if r.status >= 400 else ""
                if r.status < 400:
                    r.close()
    except TimeoutError:
        pytest.fail(f"no answer in {TIMEOUT}s to {method} {path} {query} {body[:200] if body else body!r}")
    sent = body[:300] if body else body
    assert r.status < 500 or real_server_500(r.status, text), \
        f"{method} {path} {query} {content_type} {sent!r}: {r.status} {text[:500]}"
    return r.status


def real_server_500(status: int, text: str) -> bool:
    """The one 500 kube-apiserver answers to a bad request too: an apply configuration that does not fit the
    kind's schema is an error it did not expect (reason Unknown, kubernetes#118476; fields/apply.py)."""
    return status == 500 and '"reason":"Unknown"' in text and "failed to create typed patch object" in text


async def healthy(http, cluster) -> None:
    async with asyncio.timeout(TIMEOUT), http.get(cluster.url + "/healthz") as r:
        assert r.status == 200


# --- bodies -----------------------------------------------------------------------------------------

SCALARS = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=20)
KEYS = st.sampled_from(["apiVersion", "kind", "metadata", "name", "namespace", "labels", "annotations", "data",
                        "binaryData", "immutable", "spec", "status", "generateName", "resourceVersion", "uid",
                        "finalizers", "ownerReferences", "managedFields", "op", "path", "value", "from",
                        "$patch", "$retainKeys", "$setElementOrder/finalizers"]) | st.text(max_size=12)
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner,
                                                                                                 max_size=5),
                           max_leaves=25)


def _set_path(obj, path: list, value):
    """A copy of `obj` with the value at `path` (keys or indexes, as far as they lead) replaced."""
    if not path or not isinstance(obj, dict | list) or not obj:
        return value
    copy = dict(obj) if isinstance(obj, dict) else list(obj)
    key = path[0] % len(copy) if isinstance(copy, list) else list(copy)[path[0] % len(copy)]
    copy[key] = _set_path(copy[key], path[1:], value)
    return copy


MUTATED = st.builds(_set_path, st.just(VALID), st.lists(st.integers(0, 10), max_size=3), JSON_VALUES)
OBJECTS = JSON_VALUES | MUTATED | st.dictionaries(KEYS, JSON_VALUES, max_size=4).map(lambda extra: {**VALID,
                                                                                                     **extra})


def _flip(data: bytes, edits: list[tuple[int, int]]) -> bytes:
    """`data` with bytes replaced, dropped or cut: a mutation of a valid body."""
    out = bytearray(data)
    for at, value in edits:
        if not out:
            break
        at %= len(out)
        if value < 256:
            out[at] = value
        elif value < 300:
            del out[at]
        else:
            del out[at:]
    return bytes(out)


EDITS = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 310)), max_size=6)
YAML_TEXT = st.lists(st.sampled_from(["a: ", "- ", "&x ", "*x", "!!str ", "!!binary ", "? ", "{", "}", "[", "]",
                                      ",", "\n", "  ", "'", '"', "|", ">", "#", "---\n", "...\n", "!!python/tuple ",
                                      "<<: *x", "1e9", "0x1F", "~", "true", ":"]) | st.text(max_size=5),
                     max_size=40).map("".join)


def _anchored(levels: int, width: int) -> str:
    """YAML whose aliases expand `width**levels` times: bounded here (the bombs are test_attacks.py's)."""
    lines = ['a0: &a0 "x"']
    lines += [f"a{i}: &a{i} [{', '.join(f'*a{i - 1}' for _ in range(width))}]" for i in range(1, levels + 1)]
    return "\n".join(["apiVersion: v1", "kind: ConfigMap", "metadata: {name: anchored}", "data:",
                      *("  " + line for line in lines)]) + "\n"


def protobuf_configmap() -> bytes:
    message = protobuf.message_class(KINDS[("v1", "ConfigMap")])
    fields = {"metadata": {"name": "pb", "labels": {"a": "b"}}, "data": {"k": "v"}, "binaryData": {"b": "AAE="}}
    raw = json_format.ParseDict(fields, message()).SerializeToString()
    unknown = protobuf.message_class(protobuf.UNKNOWN)(typeMeta={"apiVersion": "v1", "kind": "ConfigMap"}, raw=raw)
    return protobuf.MAGIC + unknown.SerializeToString()


BODIES = st.one_of(
    OBJECTS.map(lambda obj: (json.dumps(obj).encode(), "application/json")),
    st.tuples(OBJECTS.map(lambda obj: json.dumps(obj).encode()), EDITS).map(lambda t: (_flip(*t), "application/json")),
    OBJECTS.map(lambda obj: (yaml.safe_dump(obj).encode(), "application/yaml")),
    st.tuples(OBJECTS.map(lambda obj: yaml.safe_dump(obj).encode()), EDITS).map(
        lambda t: (_flip(*t), "application/yaml")),
    YAML_TEXT.map(lambda text: (text.encode(), "application/yaml")),
    st.tuples(st.integers(1, 3), st.integers(1, 4)).map(lambda t: (_anchored(*t).encode(), "application/yaml")),
    EDITS.map(lambda edits: (_flip(protobuf_configmap(), edits), protobuf.MEDIA_TYPE)),
    st.binary(max_size=200).map(lambda raw: (protobuf.MAGIC + raw, protobuf.MEDIA_TYPE)),
    st.binary(max_size=200).map(lambda raw: (raw, "application/json")),
)
PATCH_TYPES = ["application/merge-patch+json", "application/json-patch+json",
               "application/strategic-merge-patch+json", "application/apply-patch+yaml"]


@FUZZ
@given(body=BODIES, target=st.sampled_from(["create", "replace", "token", "review"]))
async def test_bodies_never_500(cluster, http, memory, body, target):
    raw, content_type = body
    path = {"create": CONFIGMAPS, "replace": f"{CONFIGMAPS}/base",
            "token": f"/api/v1/namespaces/{NS}/serviceaccounts/default/token",
            "review": "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"}[target]
    await send(http, cluster, "PUT" if target == "replace" else "POST", path, raw, content_type,
               [("dryRun", "All")])
    await healthy(http, cluster)


@FUZZ
@given(patch=OBJECTS | JSON_VALUES, edits=EDITS, content_type=st.sampled_from(PATCH_TYPES), mutate=st.booleans())
# Found by this test: an apply whose metadata is not a map crashed the managedFields check.
@example(patch={"apiVersion": "v1", "kind": "ConfigMap", "metadata": ["x"]}, edits=[],
         content_type="application/apply-patch+yaml", mutate=False)
async def test_patches_never_500(cluster, http, memory, patch, edits, content_type, mutate):
    raw = yaml.safe_dump(patch).encode() if "yaml" in content_type else json.dumps(patch).encode()
    query = [("dryRun", "All")] + ([("fieldManager", "fuzz")] if "apply" in content_type else [])
    await send(http, cluster, "PATCH", f"{CONFIGMAPS}/base", _flip(raw, edits) if mutate else raw, content_type,
               query)


# --- query parameters ---------------------------------------------------------------------------------

PARAMS = st.sampled_from(["limit", "continue", "resourceVersion", "resourceVersionMatch", "timeoutSeconds", "watch",
                          "labelSelector", "fieldSelector", "allowWatchBookmarks", "sendInitialEvents", "pretty",
                          "gracePeriodSeconds", "propagationPolicy", "orphanDependents", "dryRun", "fieldManager",
                          "fieldValidation", "force", "includeObject", "as"])
VALUES = st.sampled_from(["", "0", "1", "-1", "abc", "nan", "inf", "1e3", "true", "false", "All", "Exact",
                          "NotOlderThan", "Foreground", "Orphan", "Background", "Strict", "a=b", "a!=b",
                          "a in (b)", "metadata.name=base", "x=", "=", "!", "(", "9" * 30,
                          base64.b64encode(b'{"rv":1,"id":0}').decode()]) | st.text(max_size=12)


@FUZZ
@given(query=st.lists(st.tuples(PARAMS, VALUES), max_size=5), verb=st.sampled_from(["list", "watch", "get", "delete",
                                                                                   "deletecollection"]))
async def test_query_parameters_never_500(cluster, http, memory, query, verb):
    if verb in ("delete", "deletecollection"):
        query = [*query, ("dryRun", "All")]
    if verb == "watch":
        query = [*query, ("watch", "true"), ("timeoutSeconds", "1")]
    path = f"{CONFIGMAPS}/base" if verb in ("get", "delete") else CONFIGMAPS
    await send(http, cluster, "DELETE" if "delete" in verb else "GET", path, query=query)


@FUZZ
@given(body=BODIES)
async def test_delete_options_never_500(cluster, http, memory, body):
    await send(http, cluster, "DELETE", f"{CONFIGMAPS}/base", body[0], body[1], [("dryRun", "All")])


# --- SPDY frames and WebSocket messages ---------------------------------------------------------------


def _control(kind: int, payload: bytes, flags: int = 0, version: int = spdy.VERSION) -> bytes:
    return (((0x8000 | version) << 16 | kind).to_bytes(4, "big") + ((flags << 24) | len(payload)).to_bytes(4, "big")
            + payload)


def _headers(pairs: list[tuple[bytes, bytes]]) -> bytes:
    raw = len(pairs).to_bytes(4, "big") + b"".join(len(k).to_bytes(4, "big") + k + len(v).to_bytes(4, "big") + v
                                                    for k, v in pairs)
    deflate = zlib.compressobj(zdict=spdy.DICTIONARY)
    return deflate.compress(raw) + deflate.flush(zlib.Z_SYNC_FLUSH)


SYN = st.builds(lambda sid, pairs: _control(spdy.SYN_STREAM, sid.to_bytes(4, "big") + b"\0" * 6 + _headers(pairs)),
                st.integers(0, 2**32 - 1), st.lists(st.tuples(st.sampled_from([b"streamtype", b"port", b"requestid"]),
                                                              st.sampled_from([b"data", b"error", b"80", b"0", b"x",
                                                                               b"65536", b"1"])), max_size=4))
FRAMES = st.one_of(
    SYN,
    st.builds(_control, st.sampled_from([spdy.SYN_STREAM, spdy.SYN_REPLY, spdy.RST_STREAM, spdy.PING, spdy.GOAWAY,
                                         spdy.HEADERS, 4, 9, 77]), st.binary(max_size=24), st.integers(0, 255)),
    st.builds(_control, st.integers(0, 20), st.binary(max_size=12), st.integers(0, 255), st.integers(0, 5)),
    st.builds(lambda sid, data, flags: sid.to_bytes(4, "big") + ((flags << 24) | len(data)).to_bytes(4, "big") + data,
              st.integers(0, 2**31 - 1), st.binary(max_size=40), st.integers(0, 255)),
    st.binary(max_size=40),
)
SESSIONS = st.lists(FRAMES, max_size=8)


@FUZZ
@given(session=SESSIONS, split=st.integers(1, 64))
async def test_the_spdy_framer_raises_only_protocol_errors(session, split):
    framer, data = spdy.Framer(max_length=1 << 16), b"".join(session)
    try:
        for at in range(0, len(data), split):
            framer.feed(data[at:at + split])
    except spdy.ProtocolError:
        pass


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pod(cluster, http):
    """A process pod that sleeps: exec and port-forward have a container to reach."""
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "target"},
            "spec": {"containers": [{"name": "c", "image": "python", "command": [sys.executable, "-c",
                                     "import time; time.sleep(600)"],
                                     "ports": [{"containerPort": 9}]}]}}
    async with http.post(f"{cluster.url}/api/v1/namespaces/{NS}/pods", json=body) as r:
        assert r.status == 201, await r.text()
    await until(lambda: (cluster.store.get(("", "pods"), (NS, "target")) or {}).get("status", {}).get("phase")
                     == "Running", what="the pod running")
    return "target"


MESSAGES = st.lists(st.one_of(SESSIONS.map(b"".join), st.binary(max_size=64), st.text(max_size=16)), max_size=6)


@FUZZ
@given(messages=MESSAGES, subresource=st.sampled_from(["portforward", "exec"]))
async def test_websocket_messages_never_take_the_server_down(cluster, http, memory, pod, messages, subresource):
    if subresource == "exec":
        path, protocols = f"/api/v1/namespaces/{NS}/pods/{pod}/exec?command=cat&stdin=true&stdout=true", \
            ["v5.channel.k8s.io", "v4.channel.k8s.io"]
    else:
        path, protocols = f"/api/v1/namespaces/{NS}/pods/{pod}/portforward", ["SPDY/3.1+portforward.k8s.io"]
    async with asyncio.timeout(TIMEOUT):
        async with http.ws_connect(cluster.url + path, protocols=protocols) as ws:
            for message in messages:
                if ws.closed:
                    break
                await (ws.send_str(message) if isinstance(message, str) else ws.send_bytes(message))
            await ws.close()
    await healthy(http, cluster)
