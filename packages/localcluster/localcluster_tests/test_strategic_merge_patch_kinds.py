"""Strategic merge patch: each kind's merge keys, kubectl apply's patches, malformed patches."""

import copy

import pytest

from localcluster.fields.patch import PatchError, strategic_merge_patch

from .patch_support import container, names, pod, smp


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
