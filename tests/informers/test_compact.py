"""The compactor: equal parts shared, JSON unchanged, never a 1 for a true."""

from __future__ import annotations

import copy

import orjson

from informers.compact import Compactor

TEMPLATE = {"containers": [{"name": "main", "image": "img:1", "ports": [{"containerPort": 80}]}],
            "flags": {"a": True, "b": 1, "c": 1.0, "d": -0.0}}


def pod(name: str, **spec) -> dict:
    return {"metadata": {"name": name, "labels": {"app": "x"}}, "spec": {**copy.deepcopy(TEMPLATE), **spec}}


def test_siblings_share_equal_parts_and_the_json_is_unchanged():
    compact = Compactor()
    first, second = pod("p1"), pod("p2", nodeName="n1")
    before = [orjson.dumps(first), orjson.dumps(second)]
    compact(first)
    compact(second)
    assert [orjson.dumps(first), orjson.dumps(second)] == before
    assert second["spec"]["containers"] is first["spec"]["containers"]
    assert second["spec"]["flags"] is first["spec"]["flags"]
    assert second["metadata"]["labels"] is first["metadata"]["labels"]
    assert second["spec"] is not first["spec"]  # they differ by nodeName
    assert second["metadata"]["name"] == "p2"


def test_a_new_version_shares_what_did_not_change_with_the_old_one():
    compact = Compactor()
    old = compact(pod("p1", nodeName="n1"))
    compact(pod("other"))  # the last object compacted is not the one to share with
    new = pod("p1", nodeName="n1")
    new["metadata"]["labels"] = {"app": "y"}
    compact(new, previous=old)
    assert new["spec"] is old["spec"]
    assert new["metadata"] is not old["metadata"]


def test_values_equal_in_python_but_not_in_json_are_never_merged():
    compact = Compactor()
    compact(pod("p1"))
    other = pod("p2")
    other["spec"]["flags"] = {"a": 1, "b": True, "c": 1, "d": 0.0}
    assert other["spec"]["flags"] == TEMPLATE["flags"]  # what == says
    compact(other)
    assert orjson.dumps(other["spec"]["flags"]) == b'{"a":1,"b":true,"c":1,"d":0.0}'


def test_strings_are_interned():
    compact = Compactor()
    a = compact(orjson.loads(b'{"metadata": {"name": "a"}, "spec": {"image": "busybox:1.36"}}'))
    b = compact(orjson.loads(b'{"metadata": {"name": "b"}, "status": {"image": "busybox:1.36"}}'))
    assert a["spec"]["image"] is b["status"]["image"]


def test_remembered_paths_are_bounded():
    compact = Compactor(max_paths=100)
    compact({"metadata": {"name": "a"}, "data": {f"k{i}": {"v": i} for i in range(200)}})
    compact({"metadata": {"name": "b"}, "data": {"k1": {"v": 1}}})
    assert len(compact._last) < 100
