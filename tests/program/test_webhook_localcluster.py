"""The whole path as a cluster runs it: localcluster (the API server) calls the controller's webhook through the
webhook Service's endpoints, verifying the certificate the controller keeps against the caBundle it set; jobs of
every kind are refused at create and at edit with the API server's words and the controller's messages, and
valid ones pass. The ValidatingWebhookConfiguration is the interface's (webhook names, paths, rules)."""

from __future__ import annotations

import copy
import json

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from controller.devtools.local_webhook import wire
from controller.jobs.schema import admission
from controller.kinds.registry import KINDS
from controller.runtime.webhook_certs import CertKeeperConfig
from controller.runtime.webhook_server import WebhookConfig
from informers.backoff import BackoffPolicy
from tests.builders import PYTORCH as PYTORCH_KIND
from tests.builders import TENSORFLOW as TENSORFLOW_KIND
from tests.builders import JobBuilder
from tests.e2e.conftest import CRDS

from .subprocesses import until

NAMESPACE = "default"
GROUP, VERSION = "batch.tensorstack.dev", "v1beta1"
JSON_PATCH = "application/json-patch+json"
POD = {"spec": {"containers": [{"name": "tensorflow", "image": "trainer"}]}}


@pytest.fixture
async def webhook(cluster, api_client, rest_client):
    """The controller's webhook on a port of its own, behind the Service the configuration names."""
    cluster.apply_crds(CRDS)
    keeper = CertKeeperConfig(namespace=NAMESPACE, poll=0.2, backoff=BackoffPolicy(initial=0.05, cap=0.2))
    made = admission.make_webhook(rest_client, WebhookConfig(port=0, host="127.0.0.1", keeper=keeper),
                                  kinds=list(KINDS.values()))
    await made.start()
    port = int(made.address.rpartition(":")[2])
    await wire(rest_client, port, namespace=NAMESPACE)  # as `local` does: the interface's configuration

    async def bundle_set():
        got = await api_client.call_api(
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/genericjob-controller", "GET",
            auth_settings=["BearerToken"], _preload_content=False)
        hooks = (await got.json())["webhooks"]
        return all(hook["clientConfig"].get("caBundle") for hook in hooks) and made.unready() is None

    await until(bundle_set, what="the caBundle set and the certificate served")
    yield made
    await made.stop()


def job(kind: str, name: str, replicas: dict, **spec) -> dict:
    made = JobBuilder(name, kind=kind)
    for replica_type, count in replicas.items():
        made = made.replica(replica_type, count, template=copy.deepcopy(POD))
    return made.spec(**spec).obj()


async def refused(do) -> str:
    with pytest.raises(ApiException) as caught:
        await do
    assert caught.value.status == 422, caught.value.body
    return json.loads(caught.value.body)["message"]


async def test_the_api_server_refuses_what_the_controller_would(webhook, custom):
    create = custom.create_namespaced_custom_object
    generic = job("GenericJob", "generic", {"worker": 3}, failureRules=[{"worker": [2]}])
    await create(GROUP, VERSION, NAMESPACE, "genericjobs", generic)
    await create(GROUP, VERSION, NAMESPACE, "tensorflowtrainingjobs", job(TENSORFLOW_KIND, "tf", {"worker": 2,
                                                                                                   "ps": 1}))
    await create(GROUP, VERSION, NAMESPACE, "pytorchtrainingjobs", job(PYTORCH_KIND, "pt", {"master": 1,
                                                                                             "worker": 1}))

    # A rule naming an unknown type, at create.
    message = await refused(create(GROUP, VERSION, NAMESPACE, "genericjobs",
                                   job("GenericJob", "bad", {"worker": 1}, successRules=[{"chief": [0]}])))
    assert message == ('admission webhook "genericjobs.batch.tensorstack.dev" denied the request: '
                       'spec.successRules[0]: replica type "chief" is not in spec.replicaSpecs')
    # An unresolvable variable, at create.
    variable = job("GenericJob", "var", {"worker": 1})
    variable["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["args"] = ["$(replicas[ps])"]
    message = await refused(create(GROUP, VERSION, NAMESPACE, "genericjobs", variable))
    assert "spec.replicaSpecs[0].template.spec.containers[0].args[0]: " in message
    # A scale-down that strands a rule, at edit: refused, the job as it was.
    patch = custom.patch_namespaced_custom_object
    scale_down = [{"op": "replace", "path": "/spec/replicaSpecs/0/replicas", "value": 2}]
    message = await refused(patch(GROUP, VERSION, NAMESPACE, "genericjobs", "generic", scale_down,
                                  _content_type=JSON_PATCH))
    assert message.endswith('spec.failureRules[0]: rank 2 of "worker" is out of range [0, 2)')
    stored = await custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "genericjobs", "generic")
    assert stored["spec"]["replicaSpecs"][0]["replicas"] == 3 and stored["metadata"]["generation"] == 1
    # The same scale-down with the rule edited in the same write is a valid edit.
    fixed = [*scale_down, {"op": "replace", "path": "/spec/failureRules", "value": [{"worker": [1]}]}]
    await patch(GROUP, VERSION, NAMESPACE, "genericjobs", "generic", fixed, _content_type=JSON_PATCH)
    # A dry run is judged the same.
    message = await refused(create(GROUP, VERSION, NAMESPACE, "genericjobs",
                                   job("GenericJob", "dry", {"worker": 1}, failureRules=[{"worker": [1]}]),
                                   dry_run="All"))
    assert "spec.failureRules[0]: rank 1" in message


async def test_training_jobs_are_refused_past_a_crd_that_lets_them_through(cluster, webhook, custom):
    """With the CRD's rules on replicaSpecs gone (an older CRD), the webhook still refuses a PyTorch master of two
    and a TensorFlow type changed, with the controller's messages."""
    for plural in ("pytorchtrainingjobs", "tensorflowtrainingjobs"):
        crds = cluster.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        crd = cluster.api.get(crds, None, f"{plural}.{GROUP}")
        spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        spec["properties"]["replicaSpecs"].pop("x-kubernetes-validations", None)
        cluster.api.update(crds, None, crd["metadata"]["name"], crd)
    create = custom.create_namespaced_custom_object
    message = await refused(create(GROUP, VERSION, NAMESPACE, "pytorchtrainingjobs",
                                   job(PYTORCH_KIND, "two", {"master": 2, "worker": 1})))
    assert message == ('admission webhook "pytorchtrainingjobs.batch.tensorstack.dev" denied the request: '
                       'spec.replicaSpecs[0].replicas: a replica type "master" has exactly one replica')
    await create(GROUP, VERSION, NAMESPACE, "tensorflowtrainingjobs", job(TENSORFLOW_KIND, "tf", {"worker": 2,
                                                                                                   "ps": 1}))
    rename = [{"op": "replace", "path": "/spec/replicaSpecs/1/type", "value": "evaluator"}]
    message = await refused(custom.patch_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "tensorflowtrainingjobs",
                                                                  "tf", rename, _content_type=JSON_PATCH))
    assert message.endswith("spec.replicaSpecs: the replica types and their order cannot change once the job exists "
                            "(it has [worker, ps]; the spec now has [worker, evaluator]): only their replicas can")
