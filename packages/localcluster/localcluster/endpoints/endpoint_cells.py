"""The cells `kubectl get endpoints` and `kubectl get endpointslices` print, as the apiserver's printers
(kubernetes/pkg/printers/internalversion: formatEndpoints, formatDiscoveryPorts, formatDiscoveryEndpoints)
make them: at most three entries, then "+ N more...".
"""

from __future__ import annotations

MAX_SHOWN = 3


def _host_port(ip: str, port) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"  # net.JoinHostPort


def endpoints(ep: dict) -> str:
    """formatEndpoints: the ready addresses with each port (`ip:port`), or bare addresses for a subset
    without ports (a headless Service's); not-ready addresses are not shown; "<none>" without subsets."""
    subsets = ep.get("subsets") or []
    if not subsets:
        return "<none>"
    shown: list[str] = []
    more, count = False, 0
    for subset in subsets:
        addresses = [a.get("ip", "") for a in subset.get("addresses") or ()]
        entries = [[ip for ip in addresses]] if not subset.get("ports") else \
            [[_host_port(ip, port.get("port")) for ip in addresses] for port in subset["ports"]]
        for group in entries:
            count += len(group)
            for entry in group:
                if len(shown) == MAX_SHOWN:
                    more = True
                    break
                shown.append(entry)
    text = ",".join(shown)
    return f"{text} + {count - MAX_SHOWN} more..." if more else text


def _listed(entries: list[str]) -> str:
    """listWithMoreString: "<unset>" when there is nothing."""
    text = ",".join(entries[:MAX_SHOWN])
    if len(entries) > MAX_SHOWN:
        return f"{text} + {len(entries) - MAX_SHOWN} more..."
    return text or "<unset>"


def slice_ports(endpoint_slice: dict) -> str:
    """formatDiscoveryPorts: each port's number, or its name when it has none, or "*"."""
    return _listed([str(p["port"]) if p.get("port") is not None else p.get("name") or "*"
                    for p in endpoint_slice.get("ports") or ()])


def slice_endpoints(endpoint_slice: dict) -> str:
    """formatDiscoveryEndpoints: every address of every endpoint, whatever its conditions."""
    return _listed([address for endpoint in endpoint_slice.get("endpoints") or ()
                    for address in endpoint.get("addresses") or ()])
