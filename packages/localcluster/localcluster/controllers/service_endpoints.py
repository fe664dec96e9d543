"""Which pods back a Service, and at which addresses: what kube-controller-manager's endpoints and
EndpointSlice controllers compute, and what cluster DNS answers for a headless Service's name.

A Service with a selector selects the pods of its namespace whose labels hold every key and value of
it. A selected pod counts once it has an address (`status.podIP`) and while it is not finished
(Succeeded or Failed pods are dropped, as the controllers' `ShouldPodBeInEndpoints` does). It is
ready when its `Ready` condition is True and it is not being deleted; with `publishNotReadyAddresses`
every counted pod is published as ready (peers of a distributed job must find each other while they
start), including a terminating one, as the endpoints controller does. The EndpointSlice controller
keeps terminating pods in any case (`with_terminating`), not ready but still `serving` while their
Ready condition holds, so that a proxy can drain them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Backend:
    """One pod behind a Service: its address, whether it is published as ready, whether it is terminating,
    and whether it serves (its Ready condition, terminating or not: an EndpointSlice's `serving`)."""

    ip: str
    pod: dict
    ready: bool
    terminating: bool
    serving: bool


def selects(service: dict, pod: dict) -> bool:
    """Whether the Service's selector selects the pod (same namespace, every label of the selector)."""
    selector = (service.get("spec") or {}).get("selector")
    if not selector:
        return False  # no selector: its endpoints are the user's to write
    if pod["metadata"].get("namespace") != service["metadata"].get("namespace"):
        return False
    labels = pod["metadata"].get("labels") or {}
    return all(labels.get(key) == value for key, value in selector.items())


def pod_ready(pod: dict) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or ())


def backends(service: dict, pods: Iterable[dict], with_terminating: bool = False) -> list[Backend]:
    """The pods behind the Service, by pod name (the controllers' order is not promised; a stable one is kinder
    to a reader of `kubectl get endpoints` and changes nothing); terminating ones too `with_terminating`."""
    publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    out = []
    for pod in pods:
        status = pod.get("status") or {}
        ip = status.get("podIP")
        if not ip or status.get("phase") in ("Succeeded", "Failed") or not selects(service, pod):
            continue
        terminating = bool(pod["metadata"].get("deletionTimestamp"))
        if terminating and not (publish or with_terminating):
            continue
        serving = pod_ready(pod)
        ready = publish or (serving and not terminating)
        out.append(Backend(ip, pod, ready, terminating, serving))
    out.sort(key=lambda b: b.pod["metadata"]["name"])
    return out


def resolved_addresses(service: dict, pods: Iterable[dict]) -> list[str]:
    """What cluster DNS answers for a headless Service's name: the addresses of its ready backends."""
    return [b.ip for b in backends(service, pods) if b.ready]


def endpoint_view(pod: dict | None) -> tuple:
    """What of a pod can move its endpoints; other changes (most status writes) queue nothing."""
    if pod is None:
        return ()
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    ready = [c.get("status") for c in status.get("conditions") or () if c.get("type") == "Ready"]
    return (meta.get("labels"), bool(meta.get("deletionTimestamp")), status.get("podIP"),
            status.get("phase") in ("Succeeded", "Failed"), ready, spec.get("nodeName"), spec.get("hostname"),
            spec.get("subdomain"))
