"""Protobuf request bodies: real protobuf bytes (built with the protobuf runtime from the same schema) read
as the JSON Go's encoding/json makes of the same object, and the errors the apiserver gives.

The expected JSON of each kind is written out by hand from the Go types' rules: omitempty drops empty
scalars, slices and maps but never a struct (`spec: {}`, `status: {}`, `resources: {}`); a field without
omitempty keeps its zero or null (`rules: null`, core Event's `eventTime: null`); pointers keep a zero
they were sent; inlined structs lend their fields to the parent.
"""

from __future__ import annotations

import base64

import orjson
import pytest
from google.protobuf import json_format

from localcluster.endpoints import protobuf
from localcluster.endpoints.k8s_protobuf import KINDS

PB = protobuf.MEDIA_TYPE
T = 1_700_000_000  # 2023-11-14T22:13:20Z
WHEN = "2023-11-14T22:13:20Z"


def message(api_version: str, kind: str, fields: dict) -> bytes:
    """The protobuf encoding of an object given in its message's own (proto) field names."""
    name = protobuf.DELETE_OPTIONS if kind == "DeleteOptions" else KINDS[(api_version, kind)]
    return json_format.ParseDict(fields, protobuf.message_class(name)()).SerializeToString()


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    unknown = protobuf.message_class(protobuf.UNKNOWN)(typeMeta={"apiVersion": api_version, "kind": kind}, raw=raw)
    return protobuf.MAGIC + unknown.SerializeToString()


def body(api_version: str, kind: str, fields: dict) -> bytes:
    return envelope(api_version, kind, message(api_version, kind, fields))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def intstr(value: int | str) -> dict:
    return {"type": 1, "strVal": value} if isinstance(value, str) else {"type": 0, "intVal": value}


CONTAINER = {"name": "c", "image": "busybox"}
CONTAINER_JSON = {"name": "c", "image": "busybox", "resources": {}}
SELECTOR = {"matchLabels": {"app": "w"}}

# (apiVersion, kind, the message in proto field names, the JSON it stands for without kind/apiVersion)
CASES = [
    ("v1", "Namespace", {"metadata": {"name": "team-a", "labels": {"a": "b"}}},
     {"metadata": {"name": "team-a", "labels": {"a": "b"}}, "spec": {}, "status": {}}),
    ("v1", "ConfigMap",
     {"metadata": {"name": "c"}, "data": {"b": "2", "a": "1"}, "binaryData": {"bin": b64(b"\x00\xff")},
      "immutable": False},
     {"metadata": {"name": "c"}, "immutable": False, "data": {"a": "1", "b": "2"}, "binaryData": {"bin": "AP8="}}),
    ("v1", "Secret",
     {"metadata": {"name": "s"}, "data": {"k": b64(b"s3cret")}, "stringData": {"x": "y"}, "type": "Opaque"},
     {"metadata": {"name": "s"}, "data": {"k": "czNjcmV0"}, "stringData": {"x": "y"}, "type": "Opaque"}),
    ("v1", "ServiceAccount",
     {"metadata": {"name": "bot"}, "imagePullSecrets": [{"name": "reg"}], "automountServiceAccountToken": False},
     {"metadata": {"name": "bot"}, "imagePullSecrets": [{"name": "reg"}], "automountServiceAccountToken": False}),
    ("v1", "Service",
     {"metadata": {"name": "s"}, "spec": {"ports": [{"name": "http", "port": 80, "targetPort": intstr("web")},
                                                    {"name": "m", "port": 9090}], "selector": {"app": "w"}}},
     {"metadata": {"name": "s"},
      "spec": {"ports": [{"name": "http", "port": 80, "targetPort": "web"},
                         {"name": "m", "port": 9090, "targetPort": 0}],  # a zero IntOrString is 0
               "selector": {"app": "w"}},
      "status": {"loadBalancer": {}}}),
    ("apps/v1", "Deployment",
     {"metadata": {"name": "d"},
      "spec": {"replicas": 3, "selector": SELECTOR, "template": {"spec": {"containers": [CONTAINER]}},
               "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": intstr("25%"),
                                                                       "maxSurge": intstr(1)}}}},
     {"metadata": {"name": "d"},
      "spec": {"replicas": 3, "selector": SELECTOR, "template": {"metadata": {}, "spec": {"containers": [
          CONTAINER_JSON]}}, "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%",
                                                                                      "maxSurge": 1}}},
      "status": {}}),
    ("batch/v1", "Job",
     {"metadata": {"name": "j"},
      "spec": {"activeDeadlineSeconds": 600, "template": {"spec": {"containers": [CONTAINER],
                                                                   "restartPolicy": "Never"}}}},
     {"metadata": {"name": "j"},
      "spec": {"activeDeadlineSeconds": 600,  # an int64: a number in JSON, not protobuf JSON's string
               "template": {"metadata": {}, "spec": {"containers": [CONTAINER_JSON], "restartPolicy": "Never"}}},
      "status": {}}),
    ("batch/v1", "CronJob",
     {"metadata": {"name": "cj"},
      "spec": {"schedule": "*/5 * * * *", "timeZone": "Etc/UTC", "jobTemplate": {"spec": {"template": {"spec": {
          "containers": [CONTAINER], "restartPolicy": "OnFailure"}}}}}},
     {"metadata": {"name": "cj"},
      "spec": {"schedule": "*/5 * * * *", "timeZone": "Etc/UTC", "jobTemplate": {"metadata": {}, "spec": {
          "template": {"metadata": {}, "spec": {"containers": [CONTAINER_JSON], "restartPolicy": "OnFailure"}}}}},
      "status": {}}),
    ("rbac.authorization.k8s.io/v1", "Role",
     {"metadata": {"name": "r"}, "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]},
     {"metadata": {"name": "r"}, "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}),
    ("rbac.authorization.k8s.io/v1", "RoleBinding",
     {"metadata": {"name": "rb"}, "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "d"}],
      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}},
     {"metadata": {"name": "rb"}, "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "d"}],
      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}}),
    ("rbac.authorization.k8s.io/v1", "ClusterRole",
     {"metadata": {"name": "cr"}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}},
     {"metadata": {"name": "cr"}, "rules": None,  # no omitempty: a nil slice is null
      "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}}),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding",
     {"metadata": {"name": "crb"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                               "name": "cr"}},
     {"metadata": {"name": "crb"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                               "name": "cr"}}),
    ("scheduling.k8s.io/v1", "PriorityClass",
     {"metadata": {"name": "pc"}, "value": 0, "globalDefault": False, "preemptionPolicy": "Never"},
     {"metadata": {"name": "pc"}, "value": 0, "preemptionPolicy": "Never"}),
    ("v1", "ResourceQuota",
     {"metadata": {"name": "q"}, "spec": {"hard": {"cpu": {"string": "2"}, "memory": {"string": "1Gi"}},
                                          "scopes": ["BestEffort"]}},
     {"metadata": {"name": "q"}, "spec": {"hard": {"cpu": "2", "memory": "1Gi"}, "scopes": ["BestEffort"]},
      "status": {}}),
    ("policy/v1", "PodDisruptionBudget",
     {"metadata": {"name": "pdb"}, "spec": {"minAvailable": intstr("50%"), "selector": SELECTOR}},
     {"metadata": {"name": "pdb"}, "spec": {"minAvailable": "50%", "selector": SELECTOR},
      "status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}}),
    ("v1", "Pod",
     {"metadata": {"name": "p", "creationTimestamp": {"seconds": T},
                   "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                                      "time": {"seconds": T}, "fieldsType": "FieldsV1",
                                      "fieldsV1": {"Raw": b64(b'{"f:metadata":{}}')}}]},
      "spec": {"volumes": [{"name": "cfg", "volumeSource": {"configMap": {"localObjectReference": {"name": "c"},
                                                                          "defaultMode": 420}}}],
               "containers": [{"name": "c", "image": "busybox",
                               "resources": {"limits": {"cpu": {"string": "500m"}}},
                               "livenessProbe": {"handler": {"httpGet": {"path": "/", "port": intstr(8080)}},
                                                 "periodSeconds": 5}}],
               "ephemeralContainers": [{"ephemeralContainerCommon": {"name": "debug", "image": "busybox"},
                                        "targetContainerName": "c"}]}},
     {"metadata": {"name": "p", "creationTimestamp": WHEN,
                   "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1", "time": WHEN,
                                      "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}}}]},
      "spec": {"volumes": [{"name": "cfg", "configMap": {"name": "c", "defaultMode": 420}}],  # inlined
               "containers": [{"name": "c", "image": "busybox", "resources": {"limits": {"cpu": "500m"}},
                               "livenessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 5}}],
               "ephemeralContainers": [{"name": "debug", "image": "busybox", "resources": {},
                                        "targetContainerName": "c"}]},
      "status": {}}),
    ("v1", "Event",
     {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "Started",
      "firstTimestamp": {"seconds": T}, "count": 2, "type": "Normal"},
     {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "Started", "source": {},
      "firstTimestamp": WHEN, "lastTimestamp": None, "count": 2, "type": "Normal", "eventTime": None,
      "reportingComponent": "", "reportingInstance": ""}),
    ("events.k8s.io/v1", "Event",
     {"metadata": {"name": "e"}, "eventTime": {"seconds": T, "nanos": 123_456_789}, "reportingController": "c",
      "reportingInstance": "i", "action": "Pull", "reason": "Pulled", "regarding": {"kind": "Pod", "name": "p"},
      "type": "Normal"},
     {"metadata": {"name": "e"}, "eventTime": "2023-11-14T22:13:20.123456Z", "reportingController": "c",
      "reportingInstance": "i", "action": "Pull", "reason": "Pulled", "regarding": {"kind": "Pod", "name": "p"},
      "type": "Normal", "deprecatedSource": {}, "deprecatedFirstTimestamp": None, "deprecatedLastTimestamp": None}),
    ("coordination.k8s.io/v1", "Lease",
     {"metadata": {"name": "l"}, "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
                                          "renewTime": {"seconds": T, "nanos": 5000}}},
     {"metadata": {"name": "l"}, "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
                                          "renewTime": "2023-11-14T22:13:20.000005Z"}}),
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview",
     {"spec": {"resourceAttributes": {"namespace": "d", "verb": "get", "resource": "pods"}}},
     {"metadata": {}, "spec": {"resourceAttributes": {"namespace": "d", "verb": "get", "resource": "pods"}},
      "status": {"allowed": False}}),
    ("authorization.k8s.io/v1", "SubjectAccessReview",
     {"spec": {"user": "u", "extra": {"scopes": {"items": ["a", "b"]}},
               "nonResourceAttributes": {"path": "/healthz", "verb": "get"}}},
     {"metadata": {}, "spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}, "user": "u",
                               "extra": {"scopes": ["a", "b"]}},  # a Go slice type: its items, as a list
      "status": {"allowed": False}}),
    ("meta.k8s.io/v1", "DeleteOptions",
     {"gracePeriodSeconds": 0, "preconditions": {"uid": "x"}, "propagationPolicy": "Foreground"},
     {"gracePeriodSeconds": 0, "preconditions": {"uid": "x"}, "propagationPolicy": "Foreground"}),
]


@pytest.mark.parametrize(("api_version", "kind", "fields", "expected"), CASES,
                         ids=[f"{v}/{k}" for v, k, _, _ in CASES])
def test_protobuf_body_reads_as_its_json(api_version, kind, fields, expected):
    assert protobuf.decode(body(api_version, kind, fields), api_version, kind) == {
        "kind": kind, "apiVersion": api_version, **expected}


def test_every_built_in_kind_served_has_its_message(cluster):
    """The generated schema and the served kinds agree (regenerate k8s_protobuf.py when adding a kind)."""
    served = {(rt.group_version, rt.kind) for rt in cluster.registry.all() if rt.crd_name is None}
    # and the kinds of the create-only subresources (serviceaccounts/token's TokenRequest)
    served |= {(f"{group}/{version}", kind) for rt in cluster.registry.all() for _, group, version, kind in
               rt.create_subresources}
    assert set(KINDS) == served - {("apiextensions.k8s.io/v1", "CustomResourceDefinition")}
    listed = {"Namespace", "ConfigMap", "Secret", "ServiceAccount", "Service", "Deployment", "Job", "CronJob",
              "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "PriorityClass", "ResourceQuota",
              "PodDisruptionBudget", "Pod", "Event", "Lease"}
    assert listed <= {kind for _, kind in KINDS} and listed <= {kind for _, kind, _, _ in CASES}


# --- what cannot be decoded: 400s worded as the apiserver's ----------------------------------------


def _key(number: int, wire: int) -> bytes:
    value, out = number << 3 | wire, b""
    while value > 0x7F:
        out += bytes([value & 0x7F | 0x80])
        value >>= 7
    return out + bytes([value])


def _length_delimited(number: int, payload: bytes) -> bytes:
    size, out = len(payload), b""
    while size > 0x7F:
        out += bytes([size & 0x7F | 0x80])
        size >>= 7
    return _key(number, 2) + out + bytes([size]) + payload


async def post(cluster, path: str, data: bytes, content_type: str = PB, method: str = "POST") -> tuple[int, dict]:
    async with cluster.session() as http, http.request(method, cluster.url + path, data=data,
                                                             headers={"Content-Type": content_type}) as resp:
        return resp.status, orjson.loads(await resp.read())


async def test_a_field_the_schema_does_not_know_is_a_400_naming_it(cluster):
    spec = message("v1", "Pod", {"spec": {"containers": [CONTAINER]}})
    pod_spec = protobuf.message_class(KINDS[("v1", "Pod")]).FromString(spec).spec.SerializeToString()
    raw = _length_delimited(1, _length_delimited(1, b"p")) + _length_delimited(2, pod_spec + _length_delimited(
        999, b"new"))
    code, status = await post(cluster, "/api/v1/namespaces/default/pods", envelope("v1", "Pod", raw))
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"] == ('Pod in version "v1" cannot be handled as a Pod: unknown field number 999 (wire '
                                 'type 2) of k8s.io.api.core.v1.PodSpec at spec: not in Kubernetes v0.35.7\'s '
                                 'schema, which this server reads')
    # A known field number with another wire type than the schema's is just as unknown.
    raw = _length_delimited(1, _key(1, 0) + b"\x07")
    code, status = await post(cluster, "/api/v1/namespaces", envelope("v1", "Namespace", raw))
    assert code == 400 and "unknown field number 1 (wire type 0) of k8s.io.apimachinery.pkg.apis.meta.v1." \
                           "ObjectMeta at metadata" in status["message"]


async def test_undecodable_bodies_are_400s_worded_as_the_apiserver(cluster):
    code, status = await post(cluster, "/api/v1/namespaces", b'{"kind":"Namespace"}')
    assert (code, status["message"]) == (400, 'the object provided is unrecognized (must be of type Namespace): '
                                              'provided data does not appear to be a protobuf message, expected '
                                              'prefix [107 56 115 0] ({"kind":"Namespace"})')
    code, status = await post(cluster, "/apis/apps/v1/namespaces/default/deployments",
                              envelope("apps/v1", "DaemonSet", b""))
    assert (code, status["message"]) == (400, 'DaemonSet in version "v1" cannot be handled as a Deployment: no kind '
                                              '"DaemonSet" is registered for version "apps/v1"')
    quota = body("v1", "ResourceQuota", {"metadata": {"name": "q"}, "spec": {"hard": {"cpu": {"string": "lots"}}}})
    code, status = await post(cluster, "/api/v1/namespaces/default/resourcequotas", quota)
    assert (code, status["message"]) == (400, 'ResourceQuota in version "v1" cannot be handled as a ResourceQuota: '
                                              "quantities must match the regular expression "
                                              "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


# --- over HTTP: create, replace, delete; 415 for what an endpoint does not take --------------------


async def test_protobuf_create_replace_and_delete(cluster):
    path = "/api/v1/namespaces/default/configmaps"
    code, created = await post(cluster, path, body("v1", "ConfigMap", {"metadata": {"name": "c"}, "data": {"a": "1"}}))
    assert (code, created["data"]) == (201, {"a": "1"})
    update = {"metadata": {"name": "c", "resourceVersion": created["metadata"]["resourceVersion"]},
              "data": {"a": "2"}}
    code, replaced = await post(cluster, f"{path}/c", body("v1", "ConfigMap", update), method="PUT")
    assert (code, replaced["data"]) == (200, {"a": "2"})
    stale = await post(cluster, f"{path}/c", body("v1", "ConfigMap", update), method="PUT")
    assert (stale[0], stale[1]["reason"]) == (409, "Conflict")
    options = body("meta.k8s.io/v1", "DeleteOptions", {"preconditions": {"uid": "not-its-uid"}})
    code, refused = await post(cluster, f"{path}/c", options, method="DELETE")
    assert (code, refused["reason"]) == (409, "Conflict")  # the protobuf DeleteOptions' precondition was read
    options = body("meta.k8s.io/v1", "DeleteOptions", {"preconditions": {"uid": created["metadata"]["uid"]}})
    code, _ = await post(cluster, f"{path}/c", options, method="DELETE")
    assert code == 200


async def test_415_lists_the_types_the_endpoint_takes(cluster, api_client):
    from .test_crd import CRD, widget

    built_in = "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    code, status = await post(cluster, "/api/v1/namespaces", b"name: x", "text/plain")
    assert (code, status["reason"], status["message"]) == (
        415, "UnsupportedMediaType", f"the body of the request was in an unknown format - accepted media types "
                                     f"include: {built_in}")
    await post(cluster, "/api/v1/namespaces/default/configmaps", orjson.dumps({"metadata": {"name": "c"}}),
               "application/json")
    code, status = await post(cluster, "/api/v1/namespaces/default/configmaps/c",
                              body("v1", "ConfigMap", {"metadata": {"name": "c"}}), method="PATCH")
    assert (code, status["message"]) == (415, "the body of the request was in an unknown format - accepted media "
                                              "types include: application/json-patch+json, application/merge-patch"
                                              "+json, application/strategic-merge-patch+json, "
                                              "application/apply-patch+yaml")
    # Custom resources take neither protobuf nor strategic merge patches.
    await post(cluster, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", orjson.dumps(CRD),
               "application/json")
    group, version, plural = CRD["spec"]["group"], CRD["spec"]["versions"][0]["name"], CRD["spec"]["names"]["plural"]
    path = f"/apis/{group}/{version}/namespaces/default/{plural}"
    code, status = await post(cluster, path, envelope(f"{group}/{version}", "Widget", b""))
    assert (code, status["message"]) == (415, "the body of the request was in an unknown format - accepted media "
                                              "types include: application/json, application/yaml")
    assert (await post(cluster, path, orjson.dumps(widget("w", size=1)), "application/json"))[0] == 201
    code, status = await post(cluster, f"{path}/w", b"{}", "application/strategic-merge-patch+json", method="PATCH")
    assert (code, status["message"]) == (415, "the body of the request was in an unknown format - accepted media "
                                              "types include: application/json-patch+json, application/merge-patch"
                                              "+json, application/apply-patch+yaml")
