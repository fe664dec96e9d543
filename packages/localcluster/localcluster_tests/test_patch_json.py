"""localcluster.fields.patch: JSON merge patch (RFC 7386) and JSON patch (RFC 6902)."""

import copy

import pytest

from localcluster.fields.patch import PatchError, json_merge_patch, json_patch

from .patch_support import assert_untouched

# --- JSON merge patch (RFC 7386) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        # The examples of RFC 7386, appendix A.
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
        # Lists are replaced whole, nulls inside them kept.
        ({"a": [1, 2, 3]}, {"a": [None, {"x": None}]}, {"a": [None, {"x": None}]}),
        # A deleted key that was never there is fine.
        ({"a": 1}, {"zz": None}, {"a": 1}),
        (
            {"metadata": {"labels": {"a": "1", "b": "2"}}},
            {"metadata": {"labels": {"a": None, "c": "3"}}},
            {"metadata": {"labels": {"b": "2", "c": "3"}}},
        ),
        ({"a": 1}, {}, {"a": 1}),
    ],
)
def test_json_merge_patch(target, patch, expected):
    assert assert_untouched(json_merge_patch, target, patch) == expected


def test_json_merge_patch_result_shares_nothing_with_inputs():
    target = {"spec": {"items": [{"a": 1}]}, "keep": {"x": 1}}
    patch = {"spec": {"new": {"b": [1, {"c": 2}]}}}
    result = json_merge_patch(target, patch)
    result["spec"]["new"]["b"][1]["c"] = 99
    result["keep"]["x"] = 99
    result["spec"]["items"][0]["a"] = 99
    assert patch == {"spec": {"new": {"b": [1, {"c": 2}]}}}
    assert target == {"spec": {"items": [{"a": 1}]}, "keep": {"x": 1}}


@pytest.mark.parametrize("patch", [[], "x", None, 3])
def test_json_merge_patch_must_be_an_object(patch):
    with pytest.raises(PatchError):
        json_merge_patch({"a": 1}, patch)


# --- JSON patch (RFC 6902) ---------------------------------------------------------------

DOC = {"metadata": {"name": "p", "labels": {"a": "1"}}, "spec": {"items": [1, 2, 3]}}


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        ([], DOC),
        (
            [{"op": "add", "path": "/metadata/labels/b", "value": "2"}],
            {"metadata": {"name": "p", "labels": {"a": "1", "b": "2"}}, "spec": {"items": [1, 2, 3]}},
        ),
        (
            [{"op": "remove", "path": "/metadata/labels/a"}],
            {"metadata": {"name": "p", "labels": {}}, "spec": {"items": [1, 2, 3]}},
        ),
        (
            [
                {"op": "replace", "path": "/spec/items/0", "value": 9},
                {"op": "add", "path": "/spec/items/-", "value": 4},
            ],
            {"metadata": {"name": "p", "labels": {"a": "1"}}, "spec": {"items": [9, 2, 3, 4]}},
        ),
        (
            [{"op": "test", "path": "/metadata/name", "value": "p"}, {"op": "move", "from": "/spec", "path": "/x"}],
            {"metadata": {"name": "p", "labels": {"a": "1"}}, "x": {"items": [1, 2, 3]}},
        ),
        (
            [{"op": "copy", "from": "/metadata/labels", "path": "/spec/labels"}],
            {"metadata": {"name": "p", "labels": {"a": "1"}}, "spec": {"items": [1, 2, 3], "labels": {"a": "1"}}},
        ),
        # "~1" escapes "/" in keys, as annotation and label names need.
        (
            [{"op": "add", "path": "/metadata/labels/example.com~1x", "value": "y"}],
            {"metadata": {"name": "p", "labels": {"a": "1", "example.com/x": "y"}}, "spec": {"items": [1, 2, 3]}},
        ),
    ],
)
def test_json_patch(ops, expected):
    assert assert_untouched(json_patch, DOC, ops) == expected


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ([{"op": "test", "path": "/metadata/name", "value": "other"}], "not equal to tested value"),
        (
            [
                {"op": "add", "path": "/metadata/labels/b", "value": "2"},
                {"op": "test", "path": "/spec/items/0", "value": 7},
            ],
            "not equal",
        ),
        ([{"op": "remove", "path": "/metadata/nope"}], "non-existent"),
        ([{"op": "replace", "path": "/nope/deeper", "value": 1}], "JSON patch failed"),
        ([{"op": "add", "path": "/spec/items/9", "value": 1}], "outside of list"),
        ([{"op": "add", "path": "/spec/items/x", "value": 1}], "not a valid sequence index"),
        ([{"op": "add", "path": "/metadata/name/x", "value": 1}], "non-container"),
        ([{"op": "add", "path": "no-slash", "value": 1}], "must start with /"),
        ([{"op": "move", "from": "/nope", "path": "/x"}], "JSON patch failed"),
        ([{"op": "add", "path": "/x"}], "'value' member"),
        ([{"op": "frobnicate", "path": "/x"}], "Unknown operation"),
        ([{"path": "/x"}], "'op' member"),
        (["add"], "sequence of operations"),
        ([{"op": "replace", "path": "", "value": [1]}], "must leave a JSON object"),
        ({"op": "add", "path": "/x", "value": 1}, "JSON array of operations"),
    ],
)
def test_json_patch_errors(ops, message):
    before = copy.deepcopy(DOC)
    with pytest.raises(PatchError, match=message):
        json_patch(DOC, ops)
    assert before == DOC


def test_json_patch_failing_test_op_leaves_target_unchanged():
    target = {"a": 1}
    with pytest.raises(PatchError):
        json_patch(target, [{"op": "replace", "path": "/a", "value": 2}, {"op": "test", "path": "/a", "value": 1}])
    assert target == {"a": 1}
