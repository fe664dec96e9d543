"""The PyTorchTrainingJob CRD, generated from its models with the engine's schema machinery
(controller/jobs/schema/crd.py).

`python -m controller.kinds.pytorch.crd` writes manifests/crds/pytorchtrainingjob.yaml; a test fails when it
differs from what the models generate. Beyond the models, CEL rules reject at apply time: duplicate replica
types, a `master` type with other than one replica (or, without one, a first type with none), more replicas
in all than the cap or none at all, a change of the replica types or their order (a transition rule), elastic
bounds out of order (minReplicas <= expectedReplicas <= maxReplicas), a change of minReplicas or maxReplicas
(transition rules), and a job name that makes an invalid Service name (every replica has one). `backoffLimit`
defaults to 3 in the schema.
"""

from __future__ import annotations

import copy

from controller.jobs.schema import crd as generic
from controller.jobs.training import crd as training
from controller.jobs.training.runpolicy import enable_spelling
from controller.kinds.pytorch.models import API, DEFAULT_BACKOFF_LIMIT, KIND, MASTER, SHORT_NAME, PyTorchTrainingJobSpec

FILE = "pytorchtrainingjob.yaml"
MAX_TYPES = 8  # replica types of one job: bounds the cost of the rules over spec.replicaSpecs

_MASTER_RULES = [
    # Global rank 0 (the master, whose success is the job's) never moves: a master type has its one replica;
    # without one, rank 0 of the first type is the master, and that type keeps a replica. The messages are the
    # controller's own (validation.master_errors), word for word; the first type's name comes from a
    # messageExpression (its static message is what a server that cannot evaluate one prints). Not a count:
    # the estimator gives `string(int)` no size, and a concatenation with it costs the whole budget.
    {"rule": f"self.all(r, r.type != '{MASTER}' || !has(r.replicas) || r.replicas == 1)",
     "message": f'a replica type "{MASTER}" has exactly one replica'},
    {"rule": (f"self.exists(r, r.type == '{MASTER}') || size(self) == 0 || !has(self[0].replicas) || "
              "self[0].replicas >= 1"),
     "message": (f'without a "{MASTER}" type, rank 0 of the first type is the master, whose success is the job\'s: '
                 "it needs at least one replica (it has 0)"),
     "messageExpression": (f"'without a \"{MASTER}\" type, rank 0 of the first type (\"' + self[0].type + "
                           "'\") is the master, whose success is the job\\'s: it needs at least one replica "
                           "(it has 0)'")},
]
_ELASTIC_RULES = [
    {"rule": "!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",
     "message": "minReplicas must be at most maxReplicas"},
    {"rule": "!has(self.expectedReplicas) || !has(self.minReplicas) || self.minReplicas <= self.expectedReplicas",
     "message": "expectedReplicas must be at least minReplicas"},
    {"rule": "!has(self.expectedReplicas) || !has(self.maxReplicas) || self.expectedReplicas <= self.maxReplicas",
     "message": "expectedReplicas must be at most maxReplicas"},
    {"rule": ("has(self.minReplicas) == has(oldSelf.minReplicas) && "
              "(!has(self.minReplicas) || self.minReplicas == oldSelf.minReplicas)"),
     "message": "minReplicas is immutable", "fieldPath": ".minReplicas"},
    {"rule": ("has(self.maxReplicas) == has(oldSelf.maxReplicas) && "
              "(!has(self.maxReplicas) || self.maxReplicas == oldSelf.maxReplicas)"),
     "message": "maxReplicas is immutable", "fieldPath": ".maxReplicas"},
]


def spec_schema() -> dict:
    schema = training.spec_schema(PyTorchTrainingJobSpec, "The desired state of a PyTorchTrainingJob.", MAX_TYPES,
                                  type_rules=_MASTER_RULES)
    props = schema["properties"]
    backoff = props["runPolicy"]["properties"]["backoffLimit"]
    backoff["default"] = DEFAULT_BACKOFF_LIMIT
    backoff["description"] = ("Restarts of all the job's replicas together before a failing replica fails the job. "
                              f"Defaults to {DEFAULT_BACKOFF_LIMIT}.")
    props["runPolicy"]["default"] = {}
    enable_spelling(props["torchrunConfig"], "T9k's older spelling of enabled.")
    enable_spelling(props["elastic"], "T9k's older spelling of enabled.")
    props["elastic"]["x-kubernetes-validations"] = copy.deepcopy(_ELASTIC_RULES)
    return schema


def status_schema() -> dict:
    status = training.status_schema(KIND, "replicas")
    status["properties"]["elastic"] = {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True,
        "description": "Set when spec.elastic is ignored (no torchrun): a Warning (type, reason, note)."}
    return status


def pytorch_crd() -> dict:
    return training.custom_resource(API, SHORT_NAME, (
        "PyTorchTrainingJob: distributed PyTorch training (DDP or torchrun, elastic or not) of a master and other "
        "replicas; pods named [job]-[type]-[rank], each told MASTER_ADDR, MASTER_PORT and its rank."),
        spec_schema(), status_schema())


def manifests() -> dict[str, str]:
    return training.manifests("controller.kinds.pytorch.crd", pytorch_crd())


if __name__ == "__main__":
    generic.main(manifests, "Write the PyTorchTrainingJob CRD generated from the models.")
