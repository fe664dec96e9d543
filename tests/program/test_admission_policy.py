"""The creator-privilege ValidatingAdmissionPolicy (manifests/components/creator-privilege, docs/security.md).

Rendered by the overlay and by the Helm value (off by default), every expression compiles, it covers every job
kind, and, applied to localcluster (which evaluates ValidatingAdmissionPolicies with `authorizer` as the
kube-apiserver does), it refuses a job whose creator may not create the TensorBoard, or use the queue, that the
job asks for, with the server's message, and lets through everyone else and every unrelated edit.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from controller.kinds.registry import KINDS
from localcluster.crd import compile_expression
from tests.e2e.conftest import CRDS, genericjob
from tests.e2e.test_tensorflow import tfjob

from .manifests_support import MANIFESTS, ROOT, documents
from .packaging_support import CHART, OVERLAYS, helm, render

COMPONENT = MANIFESTS / "components" / "creator-privilege"
NAME = "genericjob-controller-creator-privilege"
ADMISSION = ("admissionregistration.k8s.io", "v1")
JOBS = "batch.tensorstack.dev"
TEAM = "team"
MERGE = "application/merge-patch+json"
BOARD = {"image": "tensorflow/tensorflow:2.11.0", "trainingLogFilesets": ["t9k://pvc/logs/run1"]}


def policy() -> dict:
    return yaml.safe_load((COMPONENT / "policy.yaml").read_text())


def binding() -> dict:
    return yaml.safe_load((COMPONENT / "binding.yaml").read_text())


def expressions(spec: dict) -> list[str]:
    return [entry[key] for section in ("variables", "matchConditions", "validations")
            for entry in spec.get(section) or [] for key in ("expression", "messageExpression") if key in entry]


def test_the_policy_covers_every_job_kind_on_create_and_update():
    [rule] = policy()["spec"]["matchConstraints"]["resourceRules"]
    assert rule["apiGroups"] == [JOBS] and rule["operations"] == ["CREATE", "UPDATE"]
    assert sorted(rule["resources"]) == sorted(kind.api.plural for kind in KINDS.values())
    assert {kind.api.group for kind in KINDS.values()} == {JOBS}
    assert binding()["spec"] == {"policyName": NAME, "validationActions": ["Deny"]}


def test_every_expression_compiles():
    texts = expressions(policy()["spec"])
    assert len(texts) == 12
    for text in texts:
        program, error = compile_expression(text)
        assert program is not None, f"{text}: {error}"


def unlabelled(obj: dict) -> dict:
    return {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "labels"}}


@pytest.mark.slow  # helm and kubectl kustomize
def test_the_overlay_and_the_helm_value_render_the_policy_and_nothing_else_changes():
    rendered = render(OVERLAYS / "creator-privilege")
    policies = [o for o in rendered if o["kind"].startswith("ValidatingAdmissionPolicy")]
    assert [unlabelled(o) for o in policies] == [policy(), binding()]
    assert [o for o in rendered if o not in policies] == render(MANIFESTS)
    helm_objects = documents(helm("template", "genericjob-controller", str(CHART),
                                  "--set", "admissionPolicy.enabled=true"))
    assert [unlabelled(o) for o in helm_objects if o and o["kind"].startswith("ValidatingAdmission")] \
        == [policy(), binding()]  # the same objects, with the chart's labels
    off = helm("template", "genericjob-controller", str(CHART))  # off by default
    assert "ValidatingAdmissionPolicy" not in off
    assert "0 chart(s) failed" in helm("lint", "--strict", str(CHART), "--set", "admissionPolicy.enabled=true")


# --- end to end, with users of different rights ---------------------------------------------------------------


async def as_user(cluster, name: str) -> client.ApiClient:
    configuration = client.Configuration()
    await config.load_kube_config_from_dict(cluster.kubeconfig(namespace=TEAM, token=cluster.add_token(name, name)),
                                            client_configuration=configuration)
    return client.ApiClient(configuration)


def rbac(kind: str, name: str, rules: list[dict], namespace: str | None = None) -> dict:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta, "rules": rules}


def bind(name: str, role_kind: str, role: str, user: str) -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": TEAM},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}]}


@pytest.fixture
async def team(cluster, api_client):
    """Namespace `team`: bob may create and edit jobs only; alice may also create TensorBoards and use queue
    team-a there. The policy and its binding applied as an administrator would."""
    cluster.apply_crds(CRDS)
    cluster.api.ensure_namespace(TEAM)
    admin = client.CustomObjectsApi(api_client)
    await admin.create_cluster_custom_object(*ADMISSION, "validatingadmissionpolicies", policy())
    await admin.create_cluster_custom_object(*ADMISSION, "validatingadmissionpolicybindings", binding())
    rbac_api = client.RbacAuthorizationV1Api(api_client)
    await rbac_api.create_cluster_role(rbac("ClusterRole", "jobs", [
        {"apiGroups": [JOBS], "resources": ["genericjobs", "tensorflowtrainingjobs"],
         "verbs": ["create", "get", "update", "patch"]}]))
    await rbac_api.create_namespaced_role(TEAM, rbac("Role", "boards", [
        {"apiGroups": ["tensorstack.dev"], "resources": ["tensorboards"], "verbs": ["create"]}], TEAM))
    for user in ("alice", "bob"):
        await rbac_api.create_namespaced_role_binding(TEAM, bind(f"jobs-{user}", "ClusterRole", "jobs", user))
    await rbac_api.create_namespaced_role_binding(TEAM, bind("boards-alice", "Role", "boards", "alice"))
    queue_role, queue_binding = documented_queue_grant()  # docs/security.md's example: alice may use team-a
    await rbac_api.create_cluster_role(queue_role)
    await rbac_api.create_namespaced_role_binding(TEAM, queue_binding)
    users = {name: await as_user(cluster, name) for name in ("alice", "bob")}
    yield {name: client.CustomObjectsApi(api) for name, api in users.items()}
    for api in users.values():
        await api.close()


def documented_queue_grant() -> list[dict]:
    [block] = re.findall(r"```yaml\n(.*?)```", (ROOT / "docs" / "security.md").read_text(), re.DOTALL)
    return list(yaml.safe_load_all(block))


def queue(name: str) -> dict:
    return {"t9kScheduler": {"queue": name}}


async def create(api: client.CustomObjectsApi, job: dict) -> dict:
    plural = "tensorflowtrainingjobs" if job["kind"] == "TensorFlowTrainingJob" else "genericjobs"
    return await api.create_namespaced_custom_object(JOBS, "v1beta1", TEAM, plural, job)


async def refused(api: client.CustomObjectsApi, job: dict) -> dict:
    with pytest.raises(ApiException) as caught:
        await create(api, job)
    assert caught.value.status == 403
    return json.loads(caught.value.body)


def denial(message: str) -> str:
    return f"ValidatingAdmissionPolicy '{NAME}' with binding '{NAME}' denied request: {message}"


async def test_a_job_asking_for_what_its_creator_may_not_make_is_refused(team):
    alice, bob = team["alice"], team["bob"]
    status = await refused(bob, tfjob("b1", {"worker": 1}, tensorboardSpec=BOARD))
    cause = denial("user bob may not create TensorBoards in namespace team: spec.tensorboardSpec would have the "
                   "controller make one")
    assert status["message"] == f'tensorflowtrainingjobs.batch.tensorstack.dev "b1" is forbidden: {cause}'
    assert (status["reason"], status["details"]) == ("Forbidden", {
        "name": "b1", "group": JOBS, "kind": "tensorflowtrainingjobs", "causes": [{"message": cause}]})
    status = await refused(bob, genericjob("b2", scheduler=queue("team-a")))
    assert status["message"].endswith(denial("user bob may not use queue team-a in namespace team "
                                             "(spec.scheduler.t9kScheduler.queue)"))
    await create(bob, genericjob("b3"))  # asks for neither: bob's right to create jobs is enough
    # alice holds both rights, for queue team-a only.
    await create(alice, tfjob("a1", {"worker": 1}, tensorboardSpec=BOARD, scheduler=queue("team-a")))
    status = await refused(alice, genericjob("a2", scheduler=queue("team-b")))
    assert "user alice may not use queue team-b in namespace team" in status["message"]
    status = await refused(alice, tfjob("a3", {"worker": 1}, tensorboardSpec={**BOARD, "scheduler": queue("team-b")}))
    assert "(spec.tensorboardSpec.scheduler.t9kScheduler.queue)" in status["message"]


async def test_an_edit_is_checked_only_when_it_changes_what_needs_the_right(team):
    alice, bob = team["alice"], team["bob"]
    await create(alice, tfjob("shared", {"worker": 1}, tensorboardSpec=BOARD, scheduler=queue("team-a")))
    edit = {"spec": {"runPolicy": {"backoffLimit": 3}}}
    await bob.patch_namespaced_custom_object(JOBS, "v1beta1", TEAM, "tensorflowtrainingjobs", "shared", edit,
                                             _content_type=MERGE)
    with pytest.raises(ApiException) as caught:
        await bob.patch_namespaced_custom_object(JOBS, "v1beta1", TEAM, "tensorflowtrainingjobs", "shared",
                                                 {"spec": {"tensorboardSpec": {"image": "tensorboard:other"}}},
                                                 _content_type=MERGE)
    assert caught.value.status == 403 and "may not create TensorBoards" in json.loads(caught.value.body)["message"]


async def test_without_the_binding_the_policy_refuses_nothing(team, api_client):
    await client.CustomObjectsApi(api_client).delete_cluster_custom_object(
        *ADMISSION, "validatingadmissionpolicybindings", NAME)
    await create(team["bob"], tfjob("b1", {"worker": 1}, tensorboardSpec=BOARD, scheduler=queue("team-a")))


async def test_the_server_refuses_a_policy_whose_expression_does_not_compile(cluster, api_client):
    broken = policy()
    broken["metadata"]["name"] = "broken"
    broken["spec"]["validations"][0]["expression"] = "authorizr.group('x')"
    with pytest.raises(ApiException) as caught:
        await client.CustomObjectsApi(api_client).create_cluster_custom_object(
            *ADMISSION, "validatingadmissionpolicies", broken)
    body = json.loads(caught.value.body)
    assert caught.value.status == 422 and body["details"]["causes"][0]["field"] == "spec.validations[0].expression"
    assert "undeclared reference to 'authorizr'" in body["message"]


@pytest.mark.slow  # kubectl
async def test_the_overlay_applies_to_localcluster(cluster, tmp_path):
    """kubectl apply -k, with its strict field validation against the API's schema."""
    from localcluster.testing import Kubectl

    applied = await Kubectl(cluster, tmp_path).ok("apply", "-k", str(OVERLAYS / "creator-privilege"))
    for kind in ("validatingadmissionpolicy", "validatingadmissionpolicybinding"):
        assert f"{kind}.admissionregistration.k8s.io/{NAME} created" in applied.out
