"""A pod's name table: what cluster DNS and the kubelet's /etc/hosts would answer inside the pod.

Written as a hosts file (nss_wrapper's NSS_WRAPPER_HOSTS), one per pod:

- the pod's own host name (spec.hostname, else its name) at its own address, and with spec.subdomain
  its fully qualified name `HOST.SUBDOMAIN.NS.svc.cluster.local` first, as the kubelet writes /etc/hosts;
- every Service with a selector, at the addresses of its ready backends (service_endpoints: what cluster
  DNS answers for a headless Service), by each name a pod may use: `NAME.NS`, `NAME.NS.svc` and
  `NAME.NS.svc.cluster.local`, and `NAME` alone for the pod's own namespace (its DNS search path);
- a headless Service's pods whose subdomain is the Service's name, by `HOST.NAME.NS.svc.cluster.local`
  (and the shorter forms), as cluster DNS publishes them.

Each address is there twice: as itself (127.B.X.Y) and as its IPv4-mapped IPv6 form (::ffff:127.B.X.Y), since
some clients ask for IPv6 only and retry until they time out (PyTorch's c10d store client); the kernel
carries a connection to a mapped address over IPv4, to the same listener.

A Service with a cluster IP resolves to its backends too: there is no virtual IP and no port mapping, so
its port must be the pods' (targetPort). Any other name is the machine's resolver's.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...controllers.service_endpoints import resolved_addresses

DOMAIN = "cluster.local"


def service_names(name: str, namespace: str, own_namespace: bool) -> list[str]:
    qualified = [f"{name}.{namespace}", f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.{DOMAIN}"]
    return [name, *qualified] if own_namespace else qualified


def own_names(pod: dict) -> list[str]:
    """The names the pod's /etc/hosts gives its own address, the fully qualified one first."""
    meta, spec = pod["metadata"], pod.get("spec") or {}
    host = spec.get("hostname") or meta["name"]
    subdomain = spec.get("subdomain")
    if subdomain:
        return [f"{host}.{subdomain}.{meta.get('namespace')}.svc.{DOMAIN}", host]
    return [host]


def hosts_file(pod: dict, ip: str, services: Iterable[dict], pods_by_namespace: dict[str, list[dict]]) -> str:
    """The hosts file of `pod` (at `ip`), given every Service and the pods of each namespace."""
    namespace = pod["metadata"].get("namespace")
    lines = _entries(ip, own_names(pod))
    for svc in sorted(services, key=lambda s: (s["metadata"].get("namespace"), s["metadata"]["name"])):
        svc_ns, name = svc["metadata"].get("namespace"), svc["metadata"]["name"]
        pods = pods_by_namespace.get(svc_ns, ())
        names = service_names(name, svc_ns, svc_ns == namespace)
        for address in resolved_addresses(svc, pods):
            lines.extend(_entries(address, names))
        if (svc.get("spec") or {}).get("clusterIP") == "None":
            lines.extend(_subdomain_lines(svc, pods, namespace))
    return "\n".join(lines) + "\n"


def _subdomain_lines(svc: dict, pods: Iterable[dict], namespace: str | None) -> list[str]:
    """HOST.SERVICE.NS.svc.cluster.local for the Service's pods that name it as their subdomain."""
    svc_ns, name = svc["metadata"].get("namespace"), svc["metadata"]["name"]
    out = []
    for pod in pods:
        spec = pod.get("spec") or {}
        ip = (pod.get("status") or {}).get("podIP")
        if spec.get("subdomain") != name or not ip or ip not in resolved_addresses(svc, [pod]):
            continue
        host = spec.get("hostname") or pod["metadata"]["name"]
        out.extend(_entries(ip, service_names(f"{host}.{name}", svc_ns, svc_ns == namespace)))
    return out


def _entries(ip: str, names: list[str]) -> list[str]:
    """The hosts-file lines giving `names` the IPv4 address `ip`, and its IPv4-mapped IPv6 form."""
    joined = " ".join(names)
    return [f"{ip}\t{joined}", f"::ffff:{ip}\t{joined}"]
