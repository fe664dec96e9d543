"""Strategic merge patch: merging by key, and its directives ($patch, $setElementOrder, $retainKeys, ...)."""

import pytest

from .patch_support import container, names, pod, smp

# --- strategic merge patch ---------------------------------------------------------------


def test_maps_merge_recursively_and_null_deletes():
    target = pod()
    target["metadata"]["annotations"] = {"x": "1", "y": "2"}
    patch = {"metadata": {"labels": {"tier": "front"}, "annotations": {"x": None, "z": "3"}, "nope": None}}
    result = smp(target, patch)
    assert result["metadata"] == {
        "name": "p",
        "namespace": "default",
        "labels": {"app": "web", "tier": "front"},
        "annotations": {"y": "2", "z": "3"},
    }
    assert smp(result, {"metadata": {"annotations": None}})["metadata"].get("annotations") is None


def test_new_value_is_merged_into_nothing_so_nulls_vanish():
    result = smp({"metadata": {"name": "p"}}, {"metadata": {"labels": {"a": "1", "b": None}}})
    assert result["metadata"]["labels"] == {"a": "1"}


def test_containers_merge_by_name():
    target = pod([container("a", image="nginx", ports=[{"containerPort": 80}]), container("b", image="redis")])
    result = smp(target, {"spec": {"containers": [{"name": "b", "image": "redis:7"}]}})
    assert result["spec"]["containers"] == [
        container("a", image="nginx", ports=[{"containerPort": 80}]),
        container("b", image="redis:7"),
    ]


def test_new_container_goes_first_without_set_element_order():
    # Kubernetes puts patch items the live list does not know before the remaining ones.
    target = pod([container("a", image="nginx"), container("b", image="redis")])
    result = smp(target, {"spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    assert names(result["spec"]["containers"]) == ["c", "a", "b"]


def test_patch_order_wins_over_live_order_for_items_it_names():
    target = pod([container("a"), container("b"), container("c")])
    result = smp(target, {"spec": {"containers": [container("c", image="x"), container("a", image="y")]}})
    assert names(result["spec"]["containers"]) == ["b", "c", "a"]


def test_env_merges_by_name_inside_a_container():
    env = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    target = pod([container("a", image="nginx", env=env)])
    patch = {"spec": {"containers": [{"name": "a", "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]}]}}
    result = smp(target, patch)
    assert result["spec"]["containers"][0]["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "3"},
        {"name": "C", "value": "4"},
    ]
    assert result["spec"]["containers"][0]["image"] == "nginx"


@pytest.mark.parametrize(
    ("field", "key", "live", "patch", "expected"),
    [
        (
            "ports",
            "containerPort",
            [{"containerPort": 80, "name": "http"}],
            [{"containerPort": 80, "protocol": "TCP"}],
            [{"containerPort": 80, "name": "http", "protocol": "TCP"}],
        ),
        (
            "volumeMounts",
            "mountPath",
            [{"mountPath": "/a", "name": "v"}],
            [{"mountPath": "/a", "readOnly": True}],
            [{"mountPath": "/a", "name": "v", "readOnly": True}],
        ),
        (
            "volumeDevices",
            "devicePath",
            [{"devicePath": "/d", "name": "v"}],
            [{"devicePath": "/d", "name": "w"}],
            [{"devicePath": "/d", "name": "w"}],
        ),
        # envFrom has no merge key: replaced.
        (
            "envFrom",
            None,
            [{"configMapRef": {"name": "a"}}],
            [{"secretRef": {"name": "b"}}],
            [{"secretRef": {"name": "b"}}],
        ),
    ],
)
def test_container_list_fields(field, key, live, patch, expected):
    target = pod([container("a", **{field: live})])
    result = smp(target, {"spec": {"containers": [{"name": "a", field: patch}]}})
    assert result["spec"]["containers"][0][field] == expected


def test_delete_a_container_with_patch_directive():
    target = pod([container("a"), container("b"), container("c")])
    result = smp(target, {"spec": {"containers": [{"name": "b", "$patch": "delete"}]}})
    assert names(result["spec"]["containers"]) == ["a", "c"]


def test_delete_directive_for_an_absent_item_is_a_no_op():
    target = pod([container("a")])
    result = smp(target, {"spec": {"containers": [{"name": "zz", "$patch": "delete"}]}})
    assert names(result["spec"]["containers"]) == ["a"]


def test_replace_directive_in_a_list():
    target = pod([container("a", image="x"), container("b")])
    result = smp(target, {"spec": {"containers": [{"$patch": "replace"}, {"name": "c", "image": "y"}]}})
    assert result["spec"]["containers"] == [container("c", image="y")]


def test_replace_directive_on_a_map():
    target = pod()
    result = smp(target, {"metadata": {"$patch": "replace", "name": "q", "labels": {"b": "2"}}})
    assert result["metadata"] == {"name": "q", "labels": {"b": "2"}}


def test_delete_directive_on_a_map_removes_it():
    target = pod()
    target["spec"]["securityContext"] = {"runAsUser": 1}
    result = smp(target, {"spec": {"securityContext": {"$patch": "delete"}}})
    assert "securityContext" not in result["spec"]
    assert smp({"a": 1}, {"$patch": "delete"}) == {}


def test_set_element_order_as_kubectl_apply_sends_it():
    target = pod([container("a", image="old"), container("b", image="redis")])
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
            "containers": [{"name": "a", "image": "x"}],
        }
    }
    result = smp(target, patch)
    assert result["spec"]["containers"] == [container("b", image="redis"), container("a", image="x")]


def test_set_element_order_with_additions_and_server_only_items():
    # "s" exists only on the server (say an injected sidecar); it keeps its place relative
    # to the items around it, while the patch decides the order of the ones it names.
    target = pod([container("s"), container("a"), container("b")])
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "new"}, {"name": "a"}],
            "containers": [{"name": "new", "image": "n"}],
        }
    }
    result = smp(target, patch)
    assert names(result["spec"]["containers"]) == ["s", "b", "new", "a"]


def test_set_element_order_alone_reorders():
    target = pod([container("a"), container("b"), container("c")])
    patch = {"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "b"}, {"name": "a"}]}}
    assert names(smp(target, patch)["spec"]["containers"]) == ["c", "b", "a"]


def test_set_element_order_for_a_list_missing_on_both_sides_is_dropped():
    result = smp(pod(), {"spec": {"$setElementOrder/initContainers": [{"name": "x"}]}})
    assert "initContainers" not in result["spec"]


def test_set_element_order_creates_a_missing_list():
    patch = {
        "spec": {"$setElementOrder/initContainers": [{"name": "i"}], "initContainers": [{"name": "i", "image": "x"}]}
    }
    assert smp(pod(), patch)["spec"]["initContainers"] == [{"name": "i", "image": "x"}]


def test_set_element_order_of_primitives():
    target = pod()
    target["metadata"]["finalizers"] = ["a", "b"]
    patch = {"metadata": {"$setElementOrder/finalizers": ["c", "b", "a"], "finalizers": ["c"]}}
    assert smp(target, patch)["metadata"]["finalizers"] == ["c", "b", "a"]


def test_set_element_order_nested_in_a_merged_item():
    env = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    target = pod([container("a", env=env)])
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "a"}],
            "containers": [
                {
                    "name": "a",
                    "$setElementOrder/env": [{"name": "B"}, {"name": "A"}],
                    "env": [{"name": "B", "value": "3"}],
                }
            ],
        }
    }
    assert smp(target, patch)["spec"]["containers"][0]["env"] == [
        {"name": "B", "value": "3"},
        {"name": "A", "value": "1"},
    ]


def test_retain_keys_clears_unlisted_fields():
    volume = {"name": "data", "emptyDir": {}}
    target = pod(volumes=[volume])
    patch = {"spec": {"volumes": [{"name": "data", "$retainKeys": ["configMap", "name"], "configMap": {"name": "cm"}}]}}
    assert smp(target, patch)["spec"]["volumes"] == [{"name": "data", "configMap": {"name": "cm"}}]


def test_retain_keys_allows_nulls_and_list_directives_outside_the_list():
    target = {"metadata": {"name": "x"}, "spec": {"a": 1, "b": 2, "c": [1]}}
    patch = {"spec": {"$retainKeys": ["a", "c"], "a": 5, "b": None, "$setElementOrder/c": [1]}}
    assert smp(target, patch, "Thing")["spec"] == {"a": 5, "c": [1]}


def test_delete_from_primitive_list_finalizers():
    target = pod()
    target["metadata"]["finalizers"] = ["a", "b", "c"]
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "zz"]}}
    assert smp(target, patch)["metadata"]["finalizers"] == ["a", "c"]


def test_delete_from_primitive_list_with_set_element_order_and_additions():
    # "x" is server-only: it stays after "a", which precedes it on the server; "c" follows
    # the order given.
    target = pod()
    target["metadata"]["finalizers"] = ["a", "b", "x"]
    patch = {
        "metadata": {
            "$setElementOrder/finalizers": ["a", "c"],
            "$deleteFromPrimitiveList/finalizers": ["b"],
            "finalizers": ["c"],
        }
    }
    assert smp(target, patch)["metadata"]["finalizers"] == ["a", "c", "x"]


def test_delete_from_a_missing_primitive_list_adds_nothing():
    result = smp(pod(), {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})
    assert "finalizers" not in result["metadata"]
