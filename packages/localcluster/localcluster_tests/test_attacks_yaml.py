"""Issue 35, M1: YAML bodies that expand without bound ("billion laughs"), nest without bound, or carry a value
of the wrong type, each refused with 400 as kube-apiserver refuses them; the same requests written plainly (and
with aliases used as people use them) are served. Each attack must be answered fast, while /healthz stays
answerable, and without the server's memory growing: the refusal comes before the tree is built."""

from __future__ import annotations

import asyncio
import resource
import time

import aiohttp
import pytest

from localcluster import LocalCluster
from localcluster.endpoints import yaml_bodies

YAML = {"Content-Type": "application/yaml"}
SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
ALIASING = "yaml: document contains excessive aliasing"


def laughs(levels: int, indent: str = "") -> str:
    """`levels` anchors, each a list of ten aliases of the one before: 10**levels strings once expanded."""
    lines = [f'{indent}l0: &l0 "lol"']
    lines += [f"{indent}l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines)


def review_bomb(levels: int = 8) -> str:
    """The issue's SelfSubjectAccessReview: the laughs under an unknown field, the review asked of them."""
    return ("apiVersion: authorization.k8s.io/v1\nkind: SelfSubjectAccessReview\nlaughs:\n"
            + laughs(levels, "  ") + f"\nspec:\n  nonResourceAttributes:\n    path: /healthz\n    verb: *l{levels}\n")


CONFIGMAP_BOMB = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\nlaughs:\n" + laughs(8, "  ")
                  + "\nimmutable: *l8\n")


def max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def post(cluster: LocalCluster, path: str, body: str, token: str | None = None) -> tuple[int, dict, float]:
    headers = {**YAML, "Authorization": f"Bearer {token or cluster.admin_token}"}
    started = time.monotonic()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=cluster.credentials.ssl_context)) as http, \
            http.post(cluster.url + path, data=body.encode(), headers=headers) as answer:
        return answer.status, await answer.json(content_type=None), time.monotonic() - started


async def healthz_while(cluster: LocalCluster, attack) -> tuple:
    """Run `attack`, asking /healthz all along: the slowest answer it got, and the attack's result."""
    slowest = 0.0
    done = asyncio.Event()

    async def probe():
        nonlocal slowest
        async with cluster.session() as http:
            while not done.is_set():
                started = time.monotonic()
                async with http.get(cluster.url + "/healthz") as answer:
                    assert answer.status == 200
                slowest = max(slowest, time.monotonic() - started)
                await asyncio.sleep(0.01)

    prober = asyncio.create_task(probe())
    try:
        return slowest, await attack
    finally:
        done.set()
        await prober


async def test_the_issue_s_review_bomb_from_a_bare_service_account_is_refused_fast(cluster):
    token = cluster.service_account_token("default", "bare")
    body = review_bomb()
    assert len(body) < 600  # the issue's was 582 bytes
    rss = max_rss_mb()
    slowest, (status, answer, took) = await healthz_while(cluster, post(cluster, SSAR, body, token))
    assert status == 400 and answer["reason"] == "BadRequest", answer
    assert answer["message"] == (
        f"the object provided is unrecognized (must be of type SelfSubjectAccessReview): {ALIASING} "
        f"({body.encode()[:30].hex()} ...)")
    assert took < 2 and slowest < 2
    # One level more killed the whole process: refused the same way.
    status, answer, _ = await post(cluster, SSAR, review_bomb(9), token)
    assert status == 400 and ALIASING in answer["message"]
    assert max_rss_mb() - rss < 50
    # The same review, with aliases as people use them, is served.
    plain = ("apiVersion: authorization.k8s.io/v1\nkind: SelfSubjectAccessReview\nverbs: &verb get\n"
             "spec:\n  nonResourceAttributes:\n    path: /healthz\n    verb: *verb\n")
    status, answer, _ = await post(cluster, SSAR, plain, token)
    assert status == 201 and answer["status"]["allowed"] is True, answer
    assert answer["spec"]["nonResourceAttributes"] == {"path": "/healthz", "verb": "get"}


async def test_the_issue_s_configmap_bomb_in_immutable_is_refused_and_stores_nothing(cluster):
    assert len(CONFIGMAP_BOMB) < 520  # the issue's was 490 bytes
    slowest, (status, answer, took) = await healthz_while(cluster, post(cluster, CONFIGMAPS, CONFIGMAP_BOMB))
    assert status == 400 and ALIASING in answer["message"], answer
    assert answer["message"].startswith("the object provided is unrecognized (must be of type ConfigMap): ")
    assert took < 2 and slowest < 2
    assert cluster.store.get(("", "configmaps"), ("default", "bomb")) is None
    # A non-bool `immutable` without any alias is refused by the typed decoding, as the server's.
    for value, json_kind in (('"yes"', "string"), ("[1, 2]", "array"), ("{a: 1}", "object"), ("3", "number")):
        status, answer, _ = await post(cluster, CONFIGMAPS, f"kind: ConfigMap\nmetadata: {{name: bad}}\n"
                                       f"immutable: {value}\n")
        assert status == 400 and answer["message"] == (
            'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal '
            f"{json_kind} into Go struct field ConfigMap.immutable of type bool"), answer
    assert cluster.store.get(("", "configmaps"), ("default", "bad")) is None
    # Done right: YAML 1.1's `yes` is a bool, and anchors shared between fields are copied, not shared.
    status, answer, _ = await post(cluster, CONFIGMAPS, "kind: ConfigMap\nmetadata:\n  name: good\n"
                                   "  labels: &labels {app: web}\n  annotations: *labels\n"
                                   "data: {port: '8080'}\nimmutable: yes\n")
    assert status == 201, answer
    assert answer["immutable"] is True and answer["metadata"]["annotations"] == {"app": "web"}
    assert answer["data"] == {"port": "8080"}


async def test_a_number_where_a_string_goes_is_refused_as_the_server_refuses_it(cluster):
    status, answer, _ = await post(cluster, CONFIGMAPS, "kind: ConfigMap\nmetadata: {name: port}\ndata: {port: 8080}\n")
    assert status == 400 and answer["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct '
        "field ConfigMap.data of type string")
    pod = ("kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: c, image: 5}\n")
    status, answer, _ = await post(cluster, "/api/v1/namespaces/default/pods", pod)
    assert status == 400 and answer["message"].endswith(
        "json: cannot unmarshal number into Go struct field Container.spec.containers.image of type string")


@pytest.mark.parametrize("body", ["[" * 5000 + "]" * 5000, "".join(f"{'  ' * i}a:\n" for i in range(300)) + "  b"],
                         ids=["flow", "block"])
async def test_deep_yaml_is_refused_with_400(cluster, body):
    status, answer, took = await post(cluster, CONFIGMAPS, body)
    assert status == 400 and f"exceeded max depth of {yaml_bodies.MAX_DEPTH}" in answer["message"], answer
    assert took < 2
    deep_enough = "kind: ConfigMap\nmetadata: {name: deep}\nx: " + "[" * 50 + "]" * 50 + "\n"
    status, answer, _ = await post(cluster, CONFIGMAPS, deep_enough)
    assert status == 201, answer  # an unknown field, dropped: nesting far beyond any object's is served


async def test_an_apply_patch_bomb_is_refused_as_the_field_manager_refuses_it(cluster):
    headers = {"Content-Type": "application/apply-patch+yaml", **cluster.admin_headers}
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: applied}\nlaughs:\n" + laughs(8, "  ") + "\n"
    async with cluster.session() as http:
        async with http.patch(cluster.url + CONFIGMAPS + "/applied", data=body, headers=headers,
                              params={"fieldManager": "me"}) as answer:
            status, refused = answer.status, await answer.json()
        assert status == 400 and refused["message"] == (
            f"error decoding YAML: error converting YAML to JSON: {ALIASING}"), refused
        body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: applied}\ndata: {a: &v x, b: *v}\n"
        async with http.patch(cluster.url + CONFIGMAPS + "/applied", data=body, headers=headers,
                              params={"fieldManager": "me"}) as answer:
            assert answer.status == 201 and (await answer.json())["data"] == {"a": "x", "b": "x"}


def test_the_alias_allowance_is_go_yaml_s():
    """decode.go's rule: aliases may make 99% of a small document; a 1,000-node floor; 10% past 4M nodes."""
    assert yaml_bodies.allowed_alias_ratio(1000) == 0.99
    assert yaml_bodies.allowed_alias_ratio(2_200_000) == pytest.approx(0.545)
    assert yaml_bodies.allowed_alias_ratio(5_000_000) == 0.10
    yaml_bodies.load(laughs(3))  # ~1,100 expanded of ~1,150 nodes: under 99%
    with pytest.raises(yaml_bodies.YamlError, match="excessive aliasing"):
        yaml_bodies.load(laughs(4))
    wide = "a: &a [" + ",".join(["x"] * 2000) + "]\nb: [" + ",".join(["*a"] * 200) + "]\n"
    with pytest.raises(yaml_bodies.YamlError, match="excessive aliasing"):
        yaml_bodies.load(wide)
    assert len(yaml_bodies.load(wide.replace(",".join(["*a"] * 200), ",".join(["*a"] * 90)))["b"]) == 90
