"""The kubectl commands a user types to inspect a cluster, run by the installed kubectl 1.35 against one localcluster.

As in test_kubectl_commands.py, each test has a namespace of its own on a cluster shared by the module, with the
project's CRDs installed: describe, events, auth can-i --list, api-resources, explain, debug.
"""

from __future__ import annotations

import re

import pytest
import pytest_asyncio

from localcluster import LocalCluster

from .kubectl_commands_support import (
    GROUP,
    JOBS,
    PLURAL,
    PODS,
    ROOT,
    VERSION,
    http,
    job,
    pod,
    stored,
)
from .test_kubectl import manifest

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster():
    async with LocalCluster(runner="scripted") as running:
        running.apply_crds(ROOT / "manifests" / "crds")
        yield running


# --- describe and events -------------------------------------------------------------------------


def event(name: str, involved: dict, reason: str, message: str, kind: str = "Normal",
          component: str = "genericjob-controller", when: str = "2026-01-01T00:00:00Z") -> dict:
    meta = involved["metadata"]
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
            "involvedObject": {"apiVersion": involved["apiVersion"], "kind": involved["kind"], "name": meta["name"],
                               "namespace": meta["namespace"], "uid": meta["uid"]},
            "reason": reason, "message": message, "type": kind, "source": {"component": component},
            "firstTimestamp": when, "lastTimestamp": when, "count": 1}


async def test_describe_shows_the_objects_events(kubectl, cluster, namespace):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(job("train"), pod("p")))
    await kubectl.ok("wait", "--for=condition=Ready", "pod/p", "--timeout=10s")
    train, p = stored(cluster, namespace, JOBS, "train"), stored(cluster, namespace, PODS, "p")
    await kubectl.ok("apply", "-f", "-", stdin=manifest(
        event("train.1", train, "SuccessfulCreate", "Created pod: train-worker-0"),
        event("train.2", train, "Failed", "The job failed", kind="Warning"),
        event("p.1", p, "Started", "Started container c", component="kubelet")))

    described = (await kubectl.ok("describe", "gj", "train")).out
    assert re.search(r"^Name:\s+train$", described, re.M) and re.search(r"^Namespace:\s+" + namespace, described, re.M)
    events = described.split("\nEvents:\n", 1)[1].splitlines()
    assert re.split(r"\s{2,}", events[0].strip()) == ["Type", "Reason", "Age", "From", "Message"]
    rows = [re.split(r"\s{2,}", line.strip()) for line in events[2:]]
    assert [(r[0], r[1], r[3], r[4]) for r in rows] == [
        ("Normal", "SuccessfulCreate", "genericjob-controller", "Created pod: train-worker-0"),
        ("Warning", "Failed", "genericjob-controller", "The job failed")]

    pod_description = (await kubectl.ok("describe", "pod", "p")).out
    assert re.search(r"^Status:\s+Running$", pod_description, re.M)
    assert re.search(r"^\s+Normal\s+Started\s+\S+\s+kubelet\s+Started container c$", pod_description, re.M)


async def test_events_lists_and_filters(kubectl, cluster, namespace):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(job("train"), pod("p")))
    train, p = stored(cluster, namespace, JOBS, "train"), stored(cluster, namespace, PODS, "p")
    await kubectl.ok("apply", "-f", "-", stdin=manifest(
        event("train.1", train, "SuccessfulCreate", "Created pod: train-worker-0", when="2026-01-01T00:00:01Z"),
        event("p.1", p, "Started", "Started container c", component="kubelet", when="2026-01-01T00:00:00Z")))
    everything = (await kubectl.ok("events")).rows()
    assert everything[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert [row[1:] for row in everything[1:]] == [  # oldest first
        ["Normal", "Started", "Pod/p", "Started container c"],
        ["Normal", "SuccessfulCreate", "GenericJob/train", "Created pod: train-worker-0"]]
    for_pod = (await kubectl.ok("events", "--for", "pod/p")).rows()
    assert [row[1:] for row in for_pod[1:]] == [["Normal", "Started", "Pod/p", "Started container c"]]
    warnings = await kubectl.ok("events", "--for", "gj/train", "--types=Warning")
    assert (warnings.out, warnings.err) == ("", f"No events found in {namespace} namespace.\n")


# --- auth can-i --list, api-resources, explain ---------------------------------------------------


async def test_auth_can_i_list(kubectl):
    rows = (await kubectl.ok("auth", "can-i", "--list")).rows()
    assert rows[0] == ["Resources", "Non-Resource URLs", "Resource Names", "Verbs"]
    assert ["*.*", "[]", "[]", "[*]"] in rows  # system:masters is bound to cluster-admin

    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "job-reader"},
            "rules": [{"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get", "list", "watch"]},
                      {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["settings"],
                       "verbs": ["get"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "bob-reads"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "job-reader"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]}
    await kubectl.ok("apply", "-f", "-", stdin=manifest(role, binding))
    listed = (await kubectl.ok("auth", "can-i", "--list", "--as", "bob")).rows()
    assert [f"{PLURAL}.{GROUP}", "[]", "[]", "[get list watch]"] in listed
    assert ["configmaps", "[]", "[settings]", "[get]"] in listed
    assert ["selfsubjectrulesreviews.authorization.k8s.io", "[]", "[]", "[create]"] in listed  # system:basic-user
    assert ["*.*", "[]", "[]", "[*]"] not in listed
    elsewhere = (await kubectl.ok("auth", "can-i", "--list", "--as", "bob", "-n", "default")).rows()
    assert not [row for row in elsewhere if row[0] in (f"{PLURAL}.{GROUP}", "configmaps")]


async def test_self_subject_rules_review_over_http(cluster, namespace):
    path = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
    missing = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "dangling"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "gone"},
               "subjects": [{"kind": "Group", "name": "system:masters"}]}
    code, _ = await http(cluster, "POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings",
                         missing)
    assert code == 201
    code, review = await http(cluster, "POST", path, {"apiVersion": "authorization.k8s.io/v1",
                                                      "kind": "SelfSubjectRulesReview",
                                                      "spec": {"namespace": namespace}})
    assert code == 201 and review["kind"] == "SelfSubjectRulesReview" and review["spec"] == {}
    assert review["status"]["resourceRules"][0] == {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
    assert review["status"]["incomplete"] is False
    assert review["status"]["evaluationError"] == 'role.rbac.authorization.k8s.io "gone" not found'
    code, refused = await http(cluster, "POST", path, {"kind": "SelfSubjectRulesReview", "spec": {}})
    assert (code, refused["reason"], refused["message"]) == (400, "BadRequest", "no namespace on request")


async def test_api_resources(kubectl):
    rows = (await kubectl.ok("api-resources")).rows()
    assert rows[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    by_name = {(row[0], row[-1]): row for row in rows[1:]}
    assert by_name[("pods", "Pod")] == ["pods", "po", "v1", "true", "Pod"]
    assert by_name[("deployments", "Deployment")] == ["deployments", "deploy", "apps/v1", "true", "Deployment"]
    assert by_name[(PLURAL, "GenericJob")] == [PLURAL, "gj", f"{GROUP}/{VERSION}", "true", "GenericJob"]
    assert by_name[("selfsubjectrulesreviews", "SelfSubjectRulesReview")] == [
        "selfsubjectrulesreviews", "authorization.k8s.io/v1", "false", "SelfSubjectRulesReview"]
    assert not [row for row in rows if "/" in row[0]]  # subresources are not listed

    wide = (await kubectl.ok("api-resources", "-o", "wide", f"--api-group={GROUP}")).rows()
    assert wide[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND", "VERBS", "CATEGORIES"]
    assert wide[1] == [PLURAL, "gj", f"{GROUP}/{VERSION}", "true", "GenericJob",
                       "create,delete,deletecollection,get,list,patch,update,watch", "all,t9k"]
    in_all = (await kubectl.ok("api-resources", "--categories=all", "-o", "name")).out.split()
    assert {"pods", "services", "deployments.apps", f"{PLURAL}.{GROUP}"} <= set(in_all)
    assert "configmaps" not in in_all
    namespaced = (await kubectl.ok("api-resources", "--namespaced=false", "-o", "name")).out.split()
    assert "namespaces" in namespaced and "pods" not in namespaced


async def test_explain_a_custom_resource(kubectl):
    explained = (await kubectl.ok("explain", "genericjob.spec.replicaSpecs")).out
    assert re.search(rf"^GROUP:\s+{re.escape(GROUP)}$", explained, re.M)
    assert re.search(r"^KIND:\s+GenericJob$", explained, re.M)
    assert re.search(r"^FIELD: replicaSpecs <\[\]Object>$", explained, re.M)
    assert re.search(r"^  template\t<Object> -required-$", explained, re.M)
    assert re.search(r"^  replicas\t<integer>$", explained, re.M)
    recursive = (await kubectl.ok("explain", "gj.spec", "--recursive")).out
    assert "replicaSpecs\t<[]Object> -required-" in recursive or "replicaSpecs\t<[]Object>" in recursive
    unknown = await kubectl.run("explain", "gj.spec.nothing")
    assert unknown.code == 1 and 'field "nothing" does not exist' in unknown.err


# --- debug ---------------------------------------------------------------------------------------


async def test_debug_gets_the_real_servers_answer_for_a_missing_ephemeralcontainers_subresource(
        kubectl, cluster, namespace):
    """localcluster serves no `pods/ephemeralcontainers`: its 404 must carry the empty `details` of a real
    apiserver's, which kubectl debug reads to tell a disabled feature from a missing pod (without it, 1.35
    panics on a nil pointer)."""
    await kubectl.ok("apply", "-f", "-", stdin=manifest(pod("p")))
    await kubectl.ok("wait", "--for=condition=Ready", "pod/p", "--timeout=10s")
    debug = await kubectl.run("debug", "p", "--image=busybox", "--profile=general", "--", "true")
    assert debug.code == 1, debug.err + debug.out
    assert "panic" not in debug.err and "goroutine" not in debug.err, debug.err
    assert debug.err.strip() == ('error: ephemeral containers are disabled for this cluster (error from server: '
                                 '"the server could not find the requested resource")'), debug.err
    missing = await kubectl.run("debug", "nobody", "--image=busybox", "--profile=general", "--", "true")
    assert missing.err.strip() == 'Error from server (NotFound): pods "nobody" not found', missing.err

    code, body = await http(cluster, "PATCH", f"/api/v1/namespaces/{namespace}/pods/p/ephemeralcontainers", {},
                            "application/strategic-merge-patch+json")
    assert (code, body) == (404, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                  "message": "the server could not find the requested resource", "reason": "NotFound",
                                  "details": {}, "code": 404})
