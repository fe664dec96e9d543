"""The TensorFlowTrainingJob CRD, generated from its models with the engine's schema machinery
(controller/jobs/schema/crd.py).

`python -m controller.kinds.tensorflow.crd` writes manifests/crds/tensorflowtrainingjob.yaml; a test
fails when it differs from what the models generate. Beyond the models, CEL rules reject at apply
time: duplicate replica types, more than one chief or evaluator replica, more replicas in all than the cap
(MAX_TOTAL_REPLICAS) or none at all, a chief (else a worker type) scaled to 0, a change of the replica types or
their order (a transition rule), a template without a container named `tensorflow`, and a job name that makes an
invalid Service name (every replica has one).
`tensorboardSpec` takes the fields of T9k's TensorBoardSpec only (no pod template). What every training
kind's CRD has is the training kit's (controller/jobs/training/crd.py).
"""

from __future__ import annotations

from controller.jobs.schema import crd as generic
from controller.jobs.training import crd as training
from controller.kinds.tensorflow.models import API, KIND, SHORT_NAME, TensorFlowTrainingJobSpec

FILE = "tensorflowtrainingjob.yaml"
MAX_CONTAINERS = 64  # containers of a template: bounds the cost of the rule that looks for `tensorflow`

# The messages are the controller's own for the same rule (validation.py), word for word, so that a refusal reads
# the same from the CRD, the admission webhook and a held job's condition.
_SINGLE = [
    {"rule": f"self.all(r, r.type != '{single}' || !has(r.replicas) || r.replicas <= 1)",
     "message": f'at most one replica of type "{single}"'}
    for single in ("chief", "evaluator")
]
_MASTER_KEPT = [
    # The replica the job's success is judged by never goes: the chief, else worker 0 (scaled to 0, the master
    # would move to another replica mid-run, or vanish and leave the job running forever).
    {"rule": "self.all(r, r.type != 'chief' || !has(r.replicas) || r.replicas >= 1)",
     "message": 'the job\'s success is judged by the chief so type "chief" needs at least one replica (it has 0)'},
    {"rule": ("self.exists(r, r.type == 'chief') || "
              "self.all(r, r.type != 'worker' || !has(r.replicas) || r.replicas >= 1)"),
     "message": ('the job\'s success is judged by worker 0, without a chief, so type "worker" needs at least one '
                 "replica (it has 0)")},
]
_TENSORFLOW_CONTAINER = {
    "rule": "self.spec.containers.exists(c, has(c.name) && c.name == 'tensorflow')",
    "message": "every template needs a container named tensorflow (the training container)",
    "fieldPath": ".spec.containers",
}


def spec_schema() -> dict:
    schema = training.spec_schema(TensorFlowTrainingJobSpec, "The desired state of a TensorFlowTrainingJob.",
                                  4,  # one entry per type at most
                                  type_rules=_SINGLE, master_rules=_MASTER_KEPT)
    item = schema["properties"]["replicaSpecs"]["items"]["properties"]
    generic.enum_max_length(item["type"])  # compared by the rules
    template = item["template"]
    template["x-kubernetes-validations"] = [_TENSORFLOW_CONTAINER]
    template["properties"]["spec"]["properties"]["containers"]["maxItems"] = MAX_CONTAINERS  # the rule iterates them
    return schema


def tensorflow_crd() -> dict:
    return training.custom_resource(API, SHORT_NAME, (
        "TensorFlowTrainingJob: distributed TensorFlow training of chief, worker, ps and evaluator replicas; pods "
        "named [job]-[type]-[rank], each told the cluster in TF_CONFIG."), spec_schema(),
        training.status_schema(KIND, "replicaStatus"))


def manifests() -> dict[str, str]:
    return training.manifests("controller.kinds.tensorflow.crd", tensorflow_crd())


if __name__ == "__main__":
    generic.main(manifests, "Write the TensorFlowTrainingJob CRD generated from the models.")
