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
from dataclasses import dataclass

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


@dataclass(frozen=True)
class ServiceEntry:
    """What one Service's names resolve to: its ready backends' addresses, and (headless) the host names of
    the pods that name it as their subdomain, with their addresses."""

    namespace: str
    name: str
    addresses: tuple[str, ...]
    members: tuple[tuple[str, str], ...] = ()


def service_table(services: Iterable[dict], pods_by_namespace: dict[str, list[dict]]) -> list[ServiceEntry]:
    """Every Service's entry, computed once for all the pods' files (they differ only in which names are short)."""
    table = []
    for svc in sorted(services, key=lambda s: (s["metadata"].get("namespace") or "", s["metadata"]["name"])):
        namespace, name = svc["metadata"].get("namespace") or "", svc["metadata"]["name"]
        pods = pods_by_namespace.get(namespace, ())
        addresses = tuple(resolved_addresses(svc, pods))
        members: list[tuple[str, str]] = []
        if addresses and (svc.get("spec") or {}).get("clusterIP") == "None":
            for pod in pods:
                spec = pod.get("spec") or {}
                ip = (pod.get("status") or {}).get("podIP")
                if spec.get("subdomain") == name and ip in addresses:
                    members.append((spec.get("hostname") or pod["metadata"]["name"], ip))
        if addresses:
            table.append(ServiceEntry(namespace, name, addresses, tuple(members)))
    return table


def hosts_file(pod: dict, ip: str, table: Iterable[ServiceEntry]) -> str:
    """The hosts file of `pod` (at `ip`), given every Service's entry."""
    namespace = pod["metadata"].get("namespace") or ""
    lines = _entries(ip, own_names(pod))
    for entry in table:
        own = entry.namespace == namespace
        names = service_names(entry.name, entry.namespace, own)
        for address in entry.addresses:
            lines.extend(_entries(address, names))
        for host, address in entry.members:
            lines.extend(_entries(address, service_names(f"{host}.{entry.name}", entry.namespace, own)))
    return "\n".join(lines) + "\n"


def _entries(ip: str, names: list[str]) -> list[str]:
    """The hosts-file lines giving `names` the IPv4 address `ip`, and its IPv4-mapped IPv6 form."""
    joined = " ".join(names)
    return [f"{ip}\t{joined}", f"::ffff:{ip}\t{joined}"]
