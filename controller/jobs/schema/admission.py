"""The validating admission webhook's decision for one job kind: refuse at `kubectl apply` what the controller
would refuse (the spec's "Invalid input is refused at admission, create and edit alike").

    answer = review(kind, admission_review)      # the AdmissionReview to send back; BadReview: HTTP 400

Pure and fast: no I/O, the same `kind.parse` the reconciler calls, so a denial says exactly what the job's
InvalidSpec condition (a job created invalid) or its SpecInvalid condition (an edit held, held.py) would say.

- CREATE: the object's parse and validation problems.
- UPDATE: the same on the new object, judged as the reconciler would judge it: the replica types a training job
  runs are those its status recorded (validation.fixed_types_errors), or, before the controller's first status
  write, those of the old spec (the CRD's transition rule compares with oldSelf the same way). So a scale-down
  that strands a rule, an unresolvable variable, a master of two, a total of no replica or a renamed or
  reordered training type is refused, exactly what held.py would hold (or a finished job would ignore). Then
  what the spec says cannot change once set (the CRDs' transition rules, said again for a cluster whose CRD is
  older): `runMode.pause.resumeSpecs` for every kind, and what a kind adds (`update_problems`: an elastic
  kind's bounds).
- Always allowed: DELETE (and CONNECT), a subresource, an object being deleted (deletionTimestamp set), and an
  update that leaves the spec as it was (labels, annotations, finalizers: the controller's own writes), even
  when the stored spec is invalid, or an invalid object could never be cleaned up. JobSet and Kubeflow's
  training-operator skip objects being deleted the same way.

A denial is 422 Invalid, as the API server's own validation answers: the message names every field
(`spec.failureRules[1]: ...; spec.replicaSpecs[0].replicas: ...`; the first 100, then how many more), and
`details.causes` carry each field and message (the first 1,000). A `dryRun` request is answered like any other
(nothing here has side effects).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from controller.jobs.kind import JobKind, KindApi, SpecProblem
from controller.jobs.schema.crd import RESUME_SPECS_IMMUTABLE
from controller.jobs.schema.validation import SpecError, recorded_types
from controller.runtime.webhook_server import BadRequest, Webhook, WebhookConfig
from kubeclient.rest import RestClient

REVIEW_API_VERSION = "admission.k8s.io/v1"
REVIEW_KIND = "AdmissionReview"
INVALID, CODE_INVALID = "Invalid", 422
BAD_REQUEST = 400
CAUSE_INVALID = "FieldValueInvalid"
MESSAGE_ERRORS_SHOWN = 100  # the message names every field of any real job
# The causes carry the first thousand (more than any real job has); a made-up review of 400,000 bad ranks would
# otherwise be answered with 55 MB (issue 47): the message says how many more there are.
CAUSES_SHOWN = 1000
PLACEHOLDER_UID = "00000000-0000-0000-0000-000000000000"  # never shown: no rule reads the uid
ALWAYS_ALLOWED = frozenset({"DELETE", "CONNECT"})


class BadReview(BadRequest):
    """The body is not an AdmissionReview this webhook can answer (no request, no uid): HTTP 400."""


def path(api: KindApi) -> str:
    """kubebuilder's path for a kind's validating webhook: /validate-<group with dashes>-<version>-<kind>."""
    return f"/validate-{api.group.replace('.', '-')}-{api.version}-{api.kind.lower()}"


def webhook_name(api: KindApi) -> str:
    """The webhook's name in the ValidatingWebhookConfiguration: <plural>.<group>."""
    return f"{api.plural}.{api.group}"


def make_webhook(rest: RestClient | None, config: WebhookConfig, registry: CollectorRegistry | None = None, *,
                 kinds: Sequence[JobKind]) -> Webhook:
    """The webhook server of `kinds`, one path each (`path`), with its certificates (`config`): start() and stop()
    it; its unready() is for /readyz. `rest` keeps the certificates when `config.cert_dir` is None."""
    handlers = {path(kind.api): functools.partial(review, kind) for kind in kinds}
    return Webhook(rest, handlers, config, registry)


def review(kind: JobKind, body: Any) -> dict:
    """The AdmissionReview answering `body` (a decoded AdmissionReview). BadReview when it is not one."""
    request = _request(body)
    return answer(request["uid"], decide(kind, request))


def answer(uid: str, status: dict | None) -> dict:
    """The AdmissionReview of an allowed (`status` None) or refused request."""
    response: dict[str, Any] = {"uid": uid, "allowed": status is None}
    if status is not None:
        response["status"] = status
    return {"apiVersion": REVIEW_API_VERSION, "kind": REVIEW_KIND, "response": response}


def decide(kind: JobKind, request: dict) -> dict | None:
    """None to allow; else the metav1.Status of the refusal (422 with every problem, or 400 for an object that
    is not one of this kind's)."""
    wrong = _wrong_kind(kind.api, request)
    if wrong:
        return {"status": "Failure", "code": BAD_REQUEST, "reason": "BadRequest", "message": wrong}
    found = problems(kind, request)
    if not found:
        return None
    name = (request.get("name") or _metadata(request.get("object")).get("name") or "")
    return invalid_status(kind.api, name, found)


def problems(kind: JobKind, request: dict) -> list[SpecProblem]:
    """Every reason to refuse the request; [] to allow it."""
    operation = request.get("operation")
    if operation in ALWAYS_ALLOWED or request.get("subResource"):
        return []
    new = request.get("object")
    if not isinstance(new, dict):
        return [SpecError("<root>", "the request carries no object to validate")]
    if _metadata(new).get("deletionTimestamp"):
        return []
    old = request.get("oldObject") if operation == "UPDATE" else None
    if operation == "UPDATE" and isinstance(old, dict) and old.get("spec") == new.get("spec"):
        return []
    found = kind.parse(_as_stored(new, old, request))
    errors = list(found) if isinstance(found, list) else []
    if isinstance(old, dict):
        errors += update_problems(kind, old, new)
    return list(dict.fromkeys(errors))


def update_problems(kind: JobKind, old: dict, new: dict) -> list[SpecProblem]:
    """What cannot change once set: the resumeSpecs of every kind, and what the kind adds (its
    `update_problems`: an elastic kind's bounds)."""
    errors: list[SpecProblem] = []
    before, after = _resume_specs(old), _resume_specs(new)
    if before and after != before:
        errors.append(SpecError("spec.runMode.pause.resumeSpecs", RESUME_SPECS_IMMUTABLE["message"]))
    return errors + list(kind.update_problems(old, new))


def invalid_status(api: KindApi, name: str, errors: list[SpecProblem]) -> dict:
    """metav1.Status of a 422 Invalid naming every field: what the API server prints after `admission webhook
    "NAME" denied the request: `."""
    shown = "; ".join(f"{error.field}: {error.message}" for error in errors[:MESSAGE_ERRORS_SHOWN])
    hidden = len(errors) - MESSAGE_ERRORS_SHOWN
    message = f"{shown}; and {hidden} more" if hidden > 0 else shown
    causes = [{"reason": CAUSE_INVALID, "field": error.field, "message": error.message}
              for error in errors[:CAUSES_SHOWN]]
    return {"status": "Failure", "code": CODE_INVALID, "reason": INVALID, "message": message,
            "details": {"name": name, "group": api.group, "kind": api.kind, "causes": causes}}


# --- the request ------------------------------------------------------------------------------------------------


def _request(body: Any) -> dict:
    if not isinstance(body, dict):
        raise BadReview("the body is not a JSON object (an admission.k8s.io/v1 AdmissionReview)")
    if body.get("apiVersion") != REVIEW_API_VERSION or body.get("kind") != REVIEW_KIND:
        raise BadReview(f"expected an {REVIEW_API_VERSION} {REVIEW_KIND}, got apiVersion {body.get('apiVersion')!r} "
                        f"kind {body.get('kind')!r}")
    request = body.get("request")
    if not isinstance(request, dict):
        raise BadReview("the AdmissionReview has no request")
    if not isinstance(request.get("uid"), str) or not request["uid"]:
        raise BadReview("the AdmissionReview's request has no uid")
    return request


def _wrong_kind(api: KindApi, request: dict) -> str:
    """Why the request is not for this kind ("" when it is): a ValidatingWebhookConfiguration whose rules send
    another resource here is a mistake to report, not an object to judge by the wrong rules."""
    asked = request.get("kind")
    if not isinstance(asked, dict):
        return ""  # the rules route only this kind's resource here; the kind is optional in a hand-made review
    if asked.get("group") == api.group and asked.get("kind") == api.kind:
        return ""
    return (f"this webhook validates {api.kind}.{api.group}, not {asked.get('kind')}.{asked.get('group')}: "
            "check the ValidatingWebhookConfiguration's rules")


def _metadata(obj: Any) -> dict:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return meta if isinstance(meta, dict) else {}


def _as_stored(new: dict, old: dict | None, request: dict) -> dict:
    """The object as the controller will read it. The API server has named it, given it a uid and a generation
    before it asks (a hand-made or dry-run review may lack them): what is missing is filled in, since no rule
    reads them. Its status is the stored one (an update of the main resource cannot change it; a new job has
    none). A training job's running types are what the status recorded or, before the first status write, the
    old spec's: the parse compares the new spec with them (validation.fixed_types_errors)."""
    meta = {"name": request.get("name") or "", "namespace": request.get("namespace") or "", "uid": PLACEHOLDER_UID,
            "generation": 1, **_metadata(new)}
    status = None
    if old is not None:
        status = new.get("status") if isinstance(new.get("status"), dict) else old.get("status")
        status = dict(status) if isinstance(status, dict) else {}
        types = _spec_types(old)
        if not recorded_types({"status": status}) and types:
            status["tasks"] = [{"type": replica_type} for replica_type in types]
    obj = {**new, "metadata": meta}
    if status:
        obj["status"] = status
    else:
        obj.pop("status", None)
    return obj


def _spec_types(obj: dict) -> list[str]:
    """The replica types of a spec, in order; [] when its replicaSpecs are not a list of typed entries."""
    spec = obj.get("spec")
    entries = spec.get("replicaSpecs") if isinstance(spec, dict) else None
    if not isinstance(entries, list):
        return []
    types = [t for entry in entries if isinstance(entry, dict) and isinstance(t := entry.get("type"), str)]
    return types if len(types) == len(entries) else []  # every entry an object with a string type


def _resume_specs(obj: dict) -> Any:
    """spec.runMode.pause.resumeSpecs as stored; None (or empty) when unset."""
    value: Any = obj
    for key in ("spec", "runMode", "pause", "resumeSpecs"):
        value = value.get(key) if isinstance(value, dict) else None
    return value


__all__ = ["BadReview", "answer", "decide", "invalid_status", "make_webhook", "path", "problems", "review",
           "update_problems", "webhook_name"]
