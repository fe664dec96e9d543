"""A minimal GenericJob operator written with kopf, as kopf's documentation recommends: the peer of
the scale benchmark (`python -m bench.scale`, scenario "peer").

- on create: create each replica's pod and (with `spec.service`) its headless Service, adopted by
  the job (`kopf.adopt`: owner reference, namespace, name), through the Kubernetes client;
- an in-memory index of the pods' phases by job (`@kopf.index`), fed by kopf's pod watch;
- on every pod event: count the job's phases from the index and patch the job's status (phase and
  counts) when they changed.

    KUBECONFIG=... kopf run --standalone --all-namespaces bench/kopf_peer.py

Needs `pip install -e '.[bench]'` (kopf). Not part of the project's runtime.
"""

from __future__ import annotations

import copy

import kopf
from kubernetes_asyncio import client, config

GROUP, VERSION, PLURAL = "batch.tensorstack.dev", "v1beta1", "genericjobs"
JOB_LABEL = "bench.genericjob/name"
_api: client.ApiClient | None = None
_written: dict[tuple[str, str], dict] = {}


@kopf.on.startup()
async def configure(**_) -> None:
    global _api
    await config.load_kube_config()
    _api = client.ApiClient()


@kopf.on.cleanup()
async def close(**_) -> None:
    if _api is not None:
        await _api.close()


@kopf.on.create(GROUP, VERSION, PLURAL)
async def create_replicas(spec, name, namespace, body, **_) -> None:
    core = client.CoreV1Api(_api)
    for replica in spec["replicaSpecs"]:
        for rank in range(replica["replicas"]):
            pod_name = f"{name}-{replica['type']}-{rank}"
            template = copy.deepcopy(dict(replica["template"]))
            meta = template.get("metadata") or {}
            meta.update(name=pod_name, labels={**(meta.get("labels") or {}), JOB_LABEL: name})
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                   "spec": {**template["spec"], "restartPolicy": "Never"}}
            kopf.adopt(pod, owner=body)
            await core.create_namespaced_pod(namespace, pod)
            if spec.get("service"):
                ports = [{"name": p.get("name"), "port": p["port"]} for p in spec["service"]["ports"]]
                svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": pod_name},
                       "spec": {"clusterIP": "None", "selector": {JOB_LABEL: name}, "ports": ports}}
                kopf.adopt(svc, owner=body)
                await core.create_namespaced_service(namespace, svc)


@kopf.index("pods", labels={JOB_LABEL: kopf.PRESENT})
def phases_by_job(namespace, name, labels, status, **_):
    return {(namespace, labels[JOB_LABEL]): (name, status.get("phase") or "Pending")}


@kopf.on.event("pods", labels={JOB_LABEL: kopf.PRESENT})
async def pod_changed(namespace, labels, phases_by_job: kopf.Index, **_) -> None:
    job = labels[JOB_LABEL]
    latest = dict(phases_by_job.get((namespace, job), ()))
    counts: dict[str, int] = {}
    for phase in latest.values():
        counts[phase.lower()] = counts.get(phase.lower(), 0) + 1
    total = len(latest)
    if counts.get("failed"):
        phase = "Failed"
    elif total and counts.get("succeeded", 0) == total:
        phase = "Succeeded"
    elif total and counts.get("running", 0) + counts.get("succeeded", 0) == total:
        phase = "Running"
    else:
        phase = "Pending"
    status = {"phase": phase, "aggregate": counts}
    if _written.get((namespace, job)) == status or (_written.get((namespace, job)) or {}).get("phase") in (
            "Succeeded", "Failed"):
        return
    _written[(namespace, job)] = status
    custom = client.CustomObjectsApi(_api)
    await custom.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, PLURAL, job, {"status": status},
                                                       _content_type="application/merge-patch+json")
