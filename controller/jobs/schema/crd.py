"""What every kind's CRD is made of: a structural schema from pydantic's JSON schema, the pod template,
the CEL rules every job kind has, the status every job kind reports, and how a CRD file is written.

Kubernetes needs a structural schema: every node typed, no $ref, no anyOf with null (`structural`).
Lists that CEL rules iterate get a maxItems and strings they read a maxLength, since the API server
refuses a CRD whose rules' estimated cost is over its budget; tests/controller/test_crd_cost.py prices
every rule as each supported Kubernetes version does.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
from pathlib import Path
from typing import Any

import yaml

from controller.jobs.schema.api import MAX_TOTAL_REPLICAS

MANIFEST_DIR = Path(__file__).resolve().parents[3] / "manifests" / "crds"
MAX_REPLICA_TYPES = 64  # bounds the cost of the CEL rules over spec.replicaSpecs
NAME_MAX = 63  # a label value, and a DNS-1035 label (Service names)

# Pydantic's camelCase of `t9k_scheduler` is `t9KScheduler`; the API field is `t9kScheduler` (001).
_PROPERTY_NAME_FIXES = {"t9KScheduler": "t9kScheduler"}


def structural(schema: dict) -> dict:
    """A structural OpenAPI v3 schema from a pydantic JSON schema: $refs inlined, `X | None` as
    `nullable`, `int | str` as int-or-string, `dict[str, Any]` as preserved unknown fields, null
    defaults and titles dropped."""
    return _structural(schema, schema.get("$defs", {}))


def _structural(node: dict, defs: dict) -> dict:
    node = {key: value for key, value in node.items() if key not in ("title", "$defs")}
    if "$ref" in node:
        target = defs[node.pop("$ref").rsplit("/", 1)[-1]]
        return _structural({**target, **node}, defs)  # the field's own description and default win
    if "anyOf" in node:
        return _union(node, defs)
    if node.get("default", ...) is None:
        del node["default"]
    if "default" in node:
        node["description"] = _with_default(node.get("description", ""), node["default"])
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {_PROPERTY_NAME_FIXES.get(name, name): _structural(sub, defs) for name, sub in value.items()}
        elif key == "items":
            out[key] = _structural(value, defs)
        elif key == "additionalProperties" and value is True:
            out["x-kubernetes-preserve-unknown-fields"] = True
        elif key == "additionalProperties" and isinstance(value, dict):
            out[key] = _structural(value, defs)
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
            # JSON Schema's number form (pydantic's gt/lt) is OpenAPI v3.0's bound plus a boolean flag.
            out["minimum" if key == "exclusiveMinimum" else "maximum"] = value
            out[key] = True
        else:
            out[key] = value
    return out


def _with_default(description: str, default: Any) -> str:
    """The description saying the default, as Kubernetes' own fields do: `kubectl explain` prints
    descriptions, never a schema's `default`."""
    if "default" in description.lower():
        return description
    shown = default if isinstance(default, str) else json.dumps(default)
    return f"{description.rstrip()} Defaults to {shown}.".lstrip()


_TYPED_LIMITS = ("minimum", "maximum", "pattern", "maxLength", "minLength")


def _union(node: dict, defs: dict) -> dict:
    options = node.pop("anyOf")
    nullable = any(option.get("type") == "null" for option in options)
    others = [option for option in options if option.get("type") != "null"]
    if len(others) == 1:
        out = _structural({**others[0], **node}, defs)
    elif sorted(option.get("type") for option in others) == ["integer", "string"]:
        # Each branch's own limits (minimum for the number, pattern for the string) apply only to
        # values of their type, as in the API server's int-or-string validation.
        limits = {k: v for option in others for k, v in option.items() if k in _TYPED_LIMITS}
        out = _structural({**node, **limits, "x-kubernetes-int-or-string": True}, defs)
    else:
        raise ValueError(f"no structural form for anyOf {options}")
    if nullable:
        out["nullable"] = True
    return out


POD_TEMPLATE = Path(__file__).with_name("pod_template.json")


@functools.cache
def _pod_template() -> str:
    return POD_TEMPLATE.read_text()


def template_schema(description: str) -> dict:
    """A replica's pod template, checked at `kubectl apply` as a Deployment's is: Kubernetes 1.35's
    PodTemplateSpec schema (pod_template.json, made by scripts/make_pod_template_schema.py: no descriptions, so
    that a CRD stays small enough for a client-side apply), so an unknown field (`comand:`) is named under
    fieldValidation=Strict (kubectl's default) and pruned otherwise, and a container needs a name and an image."""
    schema = json.loads(_pod_template())
    schema["description"] = description
    schema["required"] = ["spec"]
    spec = schema["properties"]["spec"]
    spec["description"] = "The pod spec of every replica of the type (a Kubernetes 1.35 PodSpec)."
    spec["properties"]["containers"]["minItems"] = 1
    return schema


UNIQUE_TYPES = {
    "rule": "self.all(x, self.exists_one(y, y.type == x.type))",
    "message": "replica types must be unique within spec.replicaSpecs",
}

AT_LEAST_ONE_REPLICA = {
    # On create and on every edit (a scale to 0 of every type): a job with no replica has nothing to judge it by.
    "rule": "self.exists(r, !has(r.replicas) || r.replicas > 0)",
    "message": "a job needs at least one replica: the replicas of all its types add up to 0",
}

def fixed_types(max_types: int) -> dict:
    """A transition rule (the training kinds): global ranks and the master follow from the types and
    their order, and the running pods were told them; only the counts may change. One comparison per possible
    entry, as `total_replicas`: `self.map(...) == oldSelf.map(...)` is priced at 2^64-1 (a macro's result has
    no size the estimator knows)."""
    pairs = " && ".join(f"(size(self) <= {i} || self[{i}].type == oldSelf[{i}].type)" for i in range(max_types))
    return {
        "rule": f"size(self) == size(oldSelf) && {pairs}",
        "message": "the replica types and their order cannot change once the job exists: only their replicas can",
    }



def total_replicas(max_types: int) -> dict:
    """On spec.replicaSpecs (the field the error names): the sum of the replicas, one term per possible
    entry. Not `self.map(...).sum()`: before Kubernetes 1.31 (cel-go 0.20) the estimator knows no size
    for a macro's result, prices the sum at 2^64-1 and refuses the CRD; a list's own entries it sizes."""
    terms = "+".join(f"(size(self)>{i}?(has(self[{i}].replicas)?self[{i}].replicas:1):0)" for i in range(max_types))
    return {
        "rule": f"{terms} <= {MAX_TOTAL_REPLICAS}",
        "message": f"the total of replicas over all replica types must be at most {MAX_TOTAL_REPLICAS}: each "
                   "replica is a record in the job's status, which must fit in one object of the API server",
    }


def enum_max_length(schema: dict) -> dict:
    """A string enum that a CEL rule reads gets the length of its longest value as maxLength: servers
    before 1.29 price an enum string as long as a request (3 MiB)."""
    schema["maxLength"] = max(len(value) for value in schema["enum"])
    return schema


def dns1035_name_rule() -> str:
    """metadata.name is a DNS-1035 label (a Service name): a DNS-1123 subdomain (what the server already
    requires of a name) with no '.' that does not start with a digit. Two cheap scans rather than one
    regex over the name, which the estimator must take as a 3 MiB string (metadata.name has no maxLength
    a CRD may declare without changing the name's errors)."""
    return r"!self.metadata.name.contains('.') && !self.metadata.name.matches(r'^\d')"

RESUME_SPECS_IMMUTABLE = {
    # On spec rather than on runMode.pause, so removing pause or runMode cannot drop them either.
    "rule": ("!has(oldSelf.runMode) || !has(oldSelf.runMode.pause) || !has(oldSelf.runMode.pause.resumeSpecs)"
             " || size(oldSelf.runMode.pause.resumeSpecs) == 0"
             " || (has(self.runMode) && has(self.runMode.pause) && has(self.runMode.pause.resumeSpecs)"
             " && self.runMode.pause.resumeSpecs == oldSelf.runMode.pause.resumeSpecs)"),
    "message": "resumeSpecs cannot be changed once set",
    "fieldPath": ".runMode.pause.resumeSpecs",
}


def integer(description: str) -> dict:
    return {"type": "integer", "description": description}


def string(description: str, **extra: Any) -> dict:
    return {"type": "string", "description": description, **extra}


def array(description: str, items: dict) -> dict:
    return {"type": "array", "description": description, "items": items}


def obj(description: str, properties: dict, **extra: Any) -> dict:
    return {"type": "object", "description": description, "properties": properties, **extra}


def status_schema(kind: str, records: str) -> dict:
    """Written by the controller only, through the status subresource. Fields not declared here are
    pruned by the API server, so every field the controller writes must be in this schema. `records`:
    where the kind keeps each type's replica records (`replicas`, `replicaStatus`: TasksStatus's key)."""
    time = {"format": "date-time"}
    condition = obj("An observation of the job's state.", {
        "type": string("Initialized, Running, ReplicaFailure, ReplicasWaiting, Completed, Failed, Paused or "
                       "SpecInvalid (an edit not applied: the job is held until a valid one)."),
        "status": string("True, False or Unknown."),
        "reason": string("A brief CamelCase reason for the last transition."),
        "message": string("A human readable message about the last transition."),
        "lastTransitionTime": string("When the status last changed.", **time),
    }, required=["type", "status"])
    replica = obj("The state of one replica's pod.", {
        "name": string("Pod name."),
        "uid": string("Pod uid."),
        "phase": string("The pod phase, or Creating or Deleted."),
        "containers": array("The states of the pod's containers.",
                             {"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
        "restartCount": integer("How many times this replica has been restarted."),
        "lastRestartUid": string("The uid of the last pod counted as a restart, so it is never counted twice."),
        "lastRestartTime": string("When the last restart was counted: its replacement waits out the restart "
                                   "back-off from then.", **time),
        "restartStreak": integer("Quick restarts in a row (a pod that ran 10 minutes starts again at 1): the "
                                  "back-off doubles with each."),
        "ready": {"type": "boolean", "description": "True while the pod is Running and Ready (absent otherwise)."},
        "debug": {"type": "boolean", "description": "True while the pod is a debug pod (absent otherwise): its end, "
                  "or its loss, counts no restart."},
        "removed": {"type": "boolean", "description": "True for a rank scaled away (absent otherwise): its record is "
                    "kept, Deleted, with its restarts."},
        "waiting": obj("What the Pending pod waits for and cannot get, as first seen (absent otherwise): its "
                       "image (ErrImagePull, ImagePullBackOff), a Secret or ConfigMap (CreateContainerConfigError), "
                       "a node (Unschedulable).", {
                           "reason": string("The kubelet's waiting reason, or the scheduler's Unschedulable."),
                           "message": string("The kubelet's or the scheduler's message."),
                       }),
    })
    task = obj("The state of the replicas of one type.", {
        "type": string("Replica type."),
        "restartCount": integer("Restarts of the replicas of this type, summed."),
        records: array("The state of each replica.", replica),
    })
    aggregate = obj("The number of replicas in each phase.", {
        name: integer(f"Replicas {name}.")
        for name in ("creating", "pending", "running", "succeeded", "failed", "unknown", "deleted")
    })
    return obj(f"The observed state of a {kind}.", {
        "observedGeneration": integer("The generation of the spec this status describes."),
        "phase": string("Pending, Running, Paused, Resuming, Succeeded, Failed or Unknown."),
        "conditions": array("The latest observations of the job's state.", condition),
        "tasks": array("The state of the replicas, by type.", task),
        "removedReplicas": array("Read only, from statuses an earlier version wrote: the records of ranks scaled "
                                 "away, now kept in their type's task (Deleted); moved there at the next reconcile.",
                                 copy.deepcopy(replica)),
        "aggregate": aggregate,
        "readyReplicas": integer("Replicas whose pod is Running and Ready (its Ready condition True, or no "
                                 "readiness reported)."),
        "ready": string("readyReplicas/total replicas, as kubectl shows a Deployment's READY (the READY column)."),
        "backoffCount": integer("Restarts of all replicas of the job."),
        "reason": string("Once the job has finished: the reason of its outcome (the reason of its Failed "
                         "condition: ReplicaFailed, BackoffLimitExceeded, DeadlineExceeded, InvalidSpec or "
                         "StatusTooLarge; or of Completed)."),
        "startTime": string("When the job started running.", **time),
        "completionTime": string("When the job finished (Succeeded or Failed).", **time),
        "templateHashes": {"type": "object", "additionalProperties": {"type": "string"},
                           "description": "The hash of each replica type's pod template, as the job last ran it (the "
                                          "annotation <prefix>/template-hash of the pods made from it): an edit "
                                          "is announced once (TemplateChanged) and applies to new pods only."},
        "cleanUpPolicy": string("Once the job has finished: the clean-up policy in force (the spec's current "
                                "one; an edit of it is applied, other edits are ignored)."),
    })


FAILED_MESSAGE = '.status.conditions[?(@.type=="Failed")].message'


def job_columns() -> list[dict]:
    """`kubectl get` of a job, of any kind: what a Deployment's and a Job's columns tell, from the status.
    `-o wide` adds when the job started and finished, and the Failed condition's message: REASON keeps the
    specification's words (ReplicaFailed), MESSAGE says why (the replica, its exit code and reason, what the
    runtime said of a command that could not start). A job that has not failed has the condition too, False,
    saying so; one the controller has not seen yet, none (an empty cell). One filter, as cert-manager's and
    Flux's Ready columns: the API server's JSONPath has no `&&`, so the type selects it, not its status."""
    return [
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase",
         "description": "Pending, Running, Paused, Resuming, Succeeded, Failed or Unknown."},
        {"name": "Ready", "type": "string", "jsonPath": ".status.ready",
         "description": "Replicas Running and Ready, of all the job's replicas."},
        {"name": "Restarts", "type": "integer", "jsonPath": ".status.backoffCount",
         "description": "Restarts of all the job's replicas."},
        {"name": "Reason", "type": "string", "jsonPath": ".status.reason",
         "description": "Why the job finished as it did (ReplicaFailed, BackoffLimitExceeded, DeadlineExceeded, "
                        "InvalidSpec, StatusTooLarge, Succeeded)."},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "Started", "type": "date", "jsonPath": ".status.startTime", "priority": 1,
         "description": "When the job started running."},
        {"name": "Completed", "type": "date", "jsonPath": ".status.completionTime", "priority": 1,
         "description": "When the job finished."},
        {"name": "Message", "type": "string", "jsonPath": FAILED_MESSAGE, "priority": 1,
         "description": "Why the job failed (the Failed condition's message: the rule met, the first failed replica, "
                        "its exit code and reason, the runtime's words for a command that could not start); "
                        "`The job has not failed.` otherwise."},
    ]


def custom_resource(group: str, version: str, kind: str, plural: str, schema: dict, columns: list[dict], *,
                    short_names: list[str] | None = None, categories: tuple[str, ...] = ("all", "t9k")) -> dict:
    """A namespaced CustomResourceDefinition of one served and stored version, with a status subresource."""
    names = {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower(),
             "categories": list(categories)}
    if short_names:
        names["shortNames"] = short_names
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": names,
            "scope": "Namespaced",
            "versions": [{"name": version, "served": True, "storage": True, "subresources": {"status": {}},
                          "additionalPrinterColumns": columns, "schema": {"openAPIV3Schema": schema}}],
        },
    }


def job_schema(description: str, spec: dict, status: dict, rules: list[dict]) -> dict:
    """The root schema of a job kind: its spec (required) and status, and CEL rules over the whole object
    (those that read metadata.name)."""
    return {
        "type": "object",
        "description": description,
        "properties": {
            "apiVersion": {"type": "string", "description": "APIVersion of this representation of the object."},
            "kind": {"type": "string", "description": "The kind of the object."},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
        "required": ["spec"],
        "x-kubernetes-validations": rules,
    }


def render(header: str, crd: dict) -> str:
    """YAML with sorted keys (as controller-gen writes), so regenerating is byte-for-byte stable. libyaml's
    emitter when PyYAML has it (the same text, five times sooner: the pod template makes CRDs large)."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return header + yaml.dump(crd, Dumper=dumper, sort_keys=True, width=120, allow_unicode=True)


def write(manifests: dict[str, str], directory: Path = MANIFEST_DIR) -> list[Path]:
    """Write each file name -> YAML into `directory`; the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in manifests.items():
        path = directory / name
        path.write_text(text)
        written.append(path)
    return written


def main(manifests, description: str, argv: list[str] | None = None) -> None:
    """A kind's `python -m controller.kinds.<kind>.crd`: write what `manifests()` gives, print each path."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--dir", type=Path, default=MANIFEST_DIR, help="output directory (default: %(default)s)")
    for path in write(manifests(), parser.parse_args(argv).dir):
        print(path)
