"""Jobs, cron jobs, deployments and replica sets: their defaults and validation."""

from __future__ import annotations

import orjson

from .causes import Cause, forbidden, invalid_value, not_supported, quoted, required
from .pods import default_pod, default_pod_template, validate_pod

# --- batch jobs and cron jobs ------------------------------------------------------------------

JOB_RESTART_POLICIES = ["OnFailure", "Never"]


def default_job(job: dict, creating: bool) -> None:
    """SetDefaults_Job, and on create the selector the job strategy generates (unless manualSelector)."""
    spec = job.setdefault("spec", {})
    template = spec.setdefault("template", {})
    if "completions" not in spec and "parallelism" not in spec:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 2147483647 if "backoffLimitPerIndex" in spec else 6)
    labels = (template.get("metadata") or {}).get("labels")
    meta = job["metadata"]
    if labels and not meta.get("labels"):
        meta["labels"] = dict(labels)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "Failed" if "podFailurePolicy" in spec else "TerminatingOrFailed")
    spec.setdefault("manualSelector", False)
    default_pod_template(template)
    if creating and not spec["manualSelector"]:
        template_labels = template.setdefault("metadata", {}).setdefault("labels", {})
        for key, value in (("job-name", meta["name"]), ("batch.kubernetes.io/job-name", meta["name"]),
                           ("controller-uid", meta["uid"]), ("batch.kubernetes.io/controller-uid", meta["uid"])):
            template_labels.setdefault(key, value)
        selector = spec["selector"] = dict(spec.get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {})}
        selector["matchLabels"].setdefault("batch.kubernetes.io/controller-uid", meta["uid"])


def validate_job(job: dict, path: str = "spec") -> list[Cause]:
    """A job's pods run to completion: its template's restartPolicy is OnFailure or Never."""
    policy = (((job.get("spec") or {}).get("template") or {}).get("spec") or {}).get("restartPolicy")
    if policy not in JOB_RESTART_POLICIES:
        return [not_supported(f"{path}.template.spec.restartPolicy", policy, JOB_RESTART_POLICIES)]
    return []


def default_cron_job(cron_job: dict) -> None:
    """SetDefaults_CronJob, and the pod defaults of its job template's pod template."""
    spec = cron_job.setdefault("spec", {})
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    default_pod_template(spec.setdefault("jobTemplate", {}).setdefault("spec", {}).setdefault("template", {}))


def validate_cron_job(cron_job: dict) -> list[Cause]:
    spec = cron_job.get("spec") or {}
    out = [] if spec.get("schedule") else [required("spec.schedule")]
    return out + validate_job(spec.get("jobTemplate") or {}, "spec.jobTemplate.spec")


# --- deployments ------------------------------------------------------------------------------------

def default_deployment(deployment: dict) -> None:
    """apps/v1 SetDefaults_Deployment, and the pod defaults of its template (SetDefaults_PodSpec and the
    containers' run on every PodTemplateSpec the apiserver decodes)."""
    spec = deployment.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    default_pod_template(spec.setdefault("template", {}))


def default_replica_set(replica_set: dict) -> None:
    """apps/v1 SetDefaults_ReplicaSet (replicas 1), and the pod defaults of its template."""
    spec = replica_set.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    default_pod_template(spec.setdefault("template", {}))


def validate_deployment(deployment: dict) -> list[Cause]:
    """What the deployment and ReplicaSet controllers rely on (ValidateDeploymentSpec, ValidateReplicaSetSpec):
    a selector that selects the template's labels, pods that restart (`Always`), a replica count that is not
    negative."""
    from apimachinery.selectors import SelectorError

    from ..selectors import label_selector_from_dict

    spec = deployment.get("spec") or {}
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    out = []
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and replicas < 0:
        out.append(invalid_value("spec.replicas", replicas, "must be greater than or equal to 0"))
    if spec.get("selector") is None:
        out.append(required("spec.selector"))
    else:
        try:
            selects = label_selector_from_dict(spec["selector"]).matches(labels)
        except SelectorError as exc:
            out.append(invalid_value("spec.selector", "", str(exc)))
        else:
            if not selects:
                pairs = ", ".join(f"{quoted(k)}:{quoted(v)}" for k, v in sorted(labels.items()))
                shown = "map[string]string{" + pairs + "}"
                out.append(("FieldValueInvalid", "spec.template.metadata.labels",
                            f"spec.template.metadata.labels: Invalid value: {shown}: `selector` does not match "
                            f"template `labels`"))
    strategy = spec.get("strategy") or {}
    if strategy.get("type") == "Recreate" and strategy.get("rollingUpdate") is not None:  # a Deployment's only
        out.append(forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"))
    policy = (template.get("spec") or {}).get("restartPolicy", "Always")
    if policy != "Always":
        out.append(not_supported("spec.template.spec.restartPolicy", policy, ["Always"]))
    # The template must make a valid pod, as the controller's pod creates would otherwise all be refused.
    as_pod = {"spec": orjson.loads(orjson.dumps(template.get("spec") or {}))}
    default_pod(as_pod)
    out += [(reason, "spec.template." + field, "spec.template." + text) for reason, field, text in validate_pod(as_pod)
            if field != "spec.restartPolicy"]
    return out


