import copy

import pytest

from localcluster.fields.patch import PatchError, json_merge_patch, json_patch, strategic_merge_patch


def assert_untouched(func, target, patch, *args):
    """Call func and check it changed neither input; return its result."""
    target_before, patch_before = copy.deepcopy(target), copy.deepcopy(patch)
    result = func(target, patch, *args)
    assert target == target_before
    assert patch == patch_before
    return result


def directive_keys(value):
    """Every "$..." key anywhere in a JSON value."""
    if isinstance(value, dict):
        found = {k for k in value if k.startswith("$")}
        for v in value.values():
            found |= directive_keys(v)
        return found
    if isinstance(value, list):
        return set().union(*(directive_keys(v) for v in value)) if value else set()
    return set()


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


# --- strategic merge patch ---------------------------------------------------------------


def container(name, **fields):
    return {"name": name, **fields}


def pod(containers=None, **spec):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": containers if containers is not None else [container("a", image="nginx")], **spec},
    }


def smp(target, patch, kind="Pod"):
    result = assert_untouched(strategic_merge_patch, target, patch, kind)
    assert not directive_keys(result), "a patch directive leaked into the result"
    return result


def names(items):
    return [item["name"] for item in items]


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


@pytest.mark.parametrize(
    ("live", "patch", "expected"),
    [
        (["a", "b"], ["b", "c"], ["a", "b", "c"]),
        (["a", "b"], ["a"], ["a", "b"]),
        (["a", "a"], ["a"], ["a"]),
        # A value new to the list has no live position: like Kubernetes, it goes first.
        (["a"], ["b"], ["b", "a"]),
        ([], ["b", "a", "b"], ["b", "a"]),
    ],
)
def test_finalizers_are_an_ordered_union(live, patch, expected):
    target = pod()
    target["metadata"]["finalizers"] = live
    assert smp(target, {"metadata": {"finalizers": patch}})["metadata"]["finalizers"] == expected


def test_owner_references_merge_by_uid():
    refs = [
        {"apiVersion": "v1", "kind": "X", "name": "one", "uid": "u1"},
        {"apiVersion": "v1", "kind": "X", "name": "two", "uid": "u2"},
    ]
    target = pod()
    target["metadata"]["ownerReferences"] = refs
    patch = {"metadata": {"ownerReferences": [{"uid": "u2", "controller": True}, {"uid": "u1", "$patch": "delete"}]}}
    assert smp(target, patch)["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "X", "name": "two", "uid": "u2", "controller": True}
    ]


def test_pod_status_conditions_merge_by_type_and_container_statuses_are_replaced():
    target = pod()
    target["status"] = {
        "conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}],
        "containerStatuses": [{"name": "a", "ready": False}, {"name": "b", "ready": False}],
        "podIPs": [{"ip": "10.0.0.1"}],
    }
    patch = {
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "a", "ready": True}],
            "podIPs": [{"ip": "fd00::1"}],
        }
    }
    status = smp(target, patch)["status"]
    assert status["conditions"] == [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]
    assert status["containerStatuses"] == [{"name": "a", "ready": True}]
    assert status["podIPs"] == [{"ip": "fd00::1"}, {"ip": "10.0.0.1"}]


def test_tolerations_have_no_merge_key_and_are_replaced():
    target = pod(tolerations=[{"key": "a", "operator": "Exists"}])
    patch = {"spec": {"tolerations": [{"key": "b", "operator": "Exists", "effect": None}]}}
    assert smp(target, patch)["spec"]["tolerations"] == [{"key": "b", "operator": "Exists"}]


@pytest.mark.parametrize(
    ("field", "live", "patch", "expected"),
    [
        ("volumes", [{"name": "v", "emptyDir": {}}], [{"name": "w", "secret": {}}], ["w", "v"]),
        ("imagePullSecrets", [{"name": "r1"}], [{"name": "r2"}], ["r2", "r1"]),
        ("initContainers", [{"name": "i1"}], [{"name": "i1", "image": "x"}], ["i1"]),
        ("ephemeralContainers", [{"name": "e1"}], [{"name": "e2"}], ["e2", "e1"]),
    ],
)
def test_pod_spec_lists_merge_by_name(field, live, patch, expected):
    result = smp(pod(**{field: live}), {"spec": {field: patch}})
    assert names(result["spec"][field]) == expected


def test_host_aliases_merge_by_ip():
    target = pod(hostAliases=[{"ip": "1.1.1.1", "hostnames": ["a"]}])
    patch = {"spec": {"hostAliases": [{"ip": "1.1.1.1", "hostnames": ["b"]}]}}
    assert smp(target, patch)["spec"]["hostAliases"] == [{"ip": "1.1.1.1", "hostnames": ["b"]}]


def test_service_ports_merge_by_port():
    service = {
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}], "clusterIPs": ["10.0.0.1"]},
    }
    patch = {"spec": {"ports": [{"port": 443, "targetPort": 8443}], "clusterIPs": ["10.0.0.2"]}}
    spec = smp(service, patch, "Service")["spec"]
    assert spec["ports"] == [{"port": 80, "name": "http"}, {"port": 443, "name": "https", "targetPort": 8443}]
    assert spec["clusterIPs"] == ["10.0.0.2"]


def test_namespace_status_conditions_merge_by_type():
    namespace = {
        "kind": "Namespace",
        "metadata": {"name": "n"},
        "status": {"conditions": [{"type": "A", "status": "True"}]},
    }
    patch = {"status": {"conditions": [{"type": "A", "status": "False"}]}}
    assert smp(namespace, patch, "Namespace")["status"]["conditions"] == [{"type": "A", "status": "False"}]


@pytest.mark.parametrize("kind", ["Event", "Lease", "GenericJob"])
def test_other_kinds_get_object_meta_rules_and_replace_other_lists(kind):
    target = {
        "metadata": {"name": "x", "finalizers": ["a"], "ownerReferences": [{"uid": "u1", "name": "one"}]},
        "spec": {"replicaSpecs": [{"name": "worker", "replicas": 2}], "settings": {"a": 1}},
    }
    patch = {
        "metadata": {"finalizers": ["b"], "ownerReferences": [{"uid": "u1", "controller": True}]},
        "spec": {"replicaSpecs": [{"name": "worker", "replicas": 3}], "settings": {"b": 2}},
    }
    result = smp(target, patch, kind)
    assert result["metadata"]["finalizers"] == ["b", "a"]
    assert result["metadata"]["ownerReferences"] == [{"uid": "u1", "name": "one", "controller": True}]
    assert result["spec"] == {"replicaSpecs": [{"name": "worker", "replicas": 3}], "settings": {"a": 1, "b": 2}}


def test_unknown_path_in_a_pod_replaces_lists():
    target = pod(readinessGates=[{"conditionType": "a"}])
    target["spec"]["containers"][0]["args"] = ["--a", "--b"]
    patch = {"spec": {"readinessGates": [{"conditionType": "b"}], "containers": [{"name": "a", "args": ["--c"]}]}}
    result = smp(target, patch)
    assert result["spec"]["readinessGates"] == [{"conditionType": "b"}]
    assert result["spec"]["containers"][0]["args"] == ["--c"]


def test_type_change_takes_the_patch_value():
    target = {"spec": {"a": [1], "b": {"x": 1}, "c": "s"}}
    patch = {"spec": {"a": {"y": 2, "z": None}, "b": "now a string", "c": [1, 2]}}
    assert smp(target, patch, "Thing")["spec"] == {"a": {"y": 2}, "b": "now a string", "c": [1, 2]}


def test_directives_in_new_values_are_applied_not_stored():
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "a"}],
            "containers": [{"name": "a", "env": [{"name": "X", "$patch": "delete"}, {"name": "Y", "value": "1"}]}],
            "initContainers": [{"name": "i", "$patch": "delete"}],
            "affinity": {"$patch": "replace", "nodeAffinity": {}},
        }
    }
    spec = smp({"metadata": {"name": "p"}}, patch)["spec"]
    assert spec == {
        "containers": [{"name": "a", "env": [{"name": "Y", "value": "1"}]}],
        "initContainers": [],
        "affinity": {"nodeAffinity": {}},
    }


def test_kubectl_apply_style_patch():
    target = pod([container("web", image="nginx:1", env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])])
    target["metadata"]["finalizers"] = ["keep", "drop"]
    patch = {
        "metadata": {
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
            "$setElementOrder/finalizers": ["keep"],
            "$deleteFromPrimitiveList/finalizers": ["drop"],
        },
        "spec": {
            "$setElementOrder/containers": [{"name": "web"}, {"name": "sidecar"}],
            "containers": [
                {
                    "name": "web",
                    "image": "nginx:2",
                    "$setElementOrder/env": [{"name": "A"}],
                    "env": [{"name": "B", "$patch": "delete"}],
                },
                {"name": "sidecar", "image": "envoy"},
            ],
        },
    }
    result = smp(target, patch)
    assert result["metadata"]["finalizers"] == ["keep"]
    assert result["metadata"]["annotations"] == {"kubectl.kubernetes.io/last-applied-configuration": "{}"}
    assert result["spec"]["containers"] == [
        container("web", image="nginx:2", env=[{"name": "A", "value": "1"}]),
        container("sidecar", image="envoy"),
    ]


def test_result_shares_nothing_with_inputs():
    target = pod([container("a", env=[{"name": "A", "value": "1"}])])
    patch = {"spec": {"containers": [{"name": "b", "env": [{"name": "B", "value": "2"}]}], "nodeSelector": {"x": "y"}}}
    result = strategic_merge_patch(target, patch, "Pod")
    for c in result["spec"]["containers"]:
        c["env"][0]["value"] = "changed"
    result["spec"]["nodeSelector"]["x"] = "changed"
    assert patch["spec"]["containers"][0]["env"][0]["value"] == "2"
    assert patch["spec"]["nodeSelector"] == {"x": "y"}
    assert target["spec"]["containers"][0]["env"][0]["value"] == "1"


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ([], "must be a JSON object"),
        ("x", "must be a JSON object"),
        ({"spec": {"$patch": "bogus"}}, "unknown patch type: bogus"),
        ({"spec": {"containers": [{"image": "no-name"}]}}, "does not contain declared merge key: name"),
        ({"spec": {"containers": [{"$patch": "delete"}]}}, "does not contain declared merge key: name"),
        ({"spec": {"containers": [{"name": "a", "$patch": "merge"}]}}, "merging lists cannot yet be specified"),
        ({"spec": {"containers": [{"name": "a", "$patch": "nope"}]}}, "unknown patch type: nope"),
        ({"spec": {"containers": ["a"]}}, "list element types are not identical"),
        ({"spec": {"containers": [["a"]]}}, "lists of lists are not supported"),
        ({"spec": {"containers": [{"name": {"x": 1}}]}}, "to identify a list item"),
        ({"metadata": {"finalizers": [{"a": 1}]}}, "list element types are not identical"),
        ({"spec": {"$setElementOrder/containers": {"name": "a"}}}, "invalid patch format of setElementOrder list"),
        ({"spec": {"$setElementOrder": [{"name": "a"}]}}, "invalid patch format of setElementOrder list"),
        ({"spec": {"$setElementOrderX/containers": []}}, "invalid patch format of setElementOrder list"),
        ({"spec": {"$setElementOrder/containers": [{"image": "x"}]}}, "does not contain declared merge key"),
        ({"spec": {"$setElementOrder/containers": [{"name": "a"}], "containers": {"name": "a"}}}, "expected a list"),
        (
            {"spec": {"$setElementOrder/containers": [{"name": "b"}], "containers": [{"name": "a", "image": "x"}]}},
            "doesn't match \\$setElementOrder list",
        ),
        ({"metadata": {"$deleteFromPrimitiveList": ["a"]}}, "invalid patch format of primitive list"),
        ({"spec": {"$retainKeys": "containers"}}, "invalid patch format of retainKeys"),
        ({"spec": {"$retainKeys": ["containers"], "nodeName": "n"}}, "retainKeys directive does not list"),
    ],
)
def test_malformed_strategic_merge_patches(patch, message):
    target = pod([container("a"), container("b")])
    target["metadata"]["finalizers"] = ["f"]
    before = copy.deepcopy(target)
    with pytest.raises(PatchError, match=message):
        strategic_merge_patch(target, patch, "Pod")
    assert target == before
