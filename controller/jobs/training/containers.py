"""The training container of a replica's pod, its port, and the variables the kind gives it: what the
training kinds do alike ("the port by name, else a default; each variable unless the user set it")."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def training_container(pod_spec: dict, names: Sequence[str], *, any_container: bool = False) -> dict | None:
    """The first container named one of `names` (in their order); else, with `any_container`, the first
    container; else None."""
    containers = [c for c in pod_spec.get("containers") or () if isinstance(c, dict)]
    for name in names:
        found = next((c for c in containers if c.get("name") == name), None)
        if found is not None:
            return found
    return containers[0] if containers and any_container else None


def named_port(container: dict | None, name: str, default: int) -> int:
    """The container's port named `name`, else `default`."""
    for entry in (container or {}).get("ports") or ():
        if isinstance(entry, dict) and entry.get("name") == name and isinstance(entry.get("containerPort"), int):
            return entry["containerPort"]
    return default


def set_env(containers: Iterable[object], env: Iterable[tuple[str, str]]) -> None:
    """The variables (name, value) in each container, each unless the user set it there."""
    env = list(env)
    for container in containers:
        if not isinstance(container, dict):
            continue
        entries = container.setdefault("env", [])
        given = {e.get("name") for e in entries if isinstance(e, dict)}
        entries.extend({"name": name, "value": value} for name, value in env if name not in given)
