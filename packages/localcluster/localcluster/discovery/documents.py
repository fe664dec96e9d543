"""Discovery documents (/version, /api, /apis, ...) in the legacy (unaggregated) format."""

from __future__ import annotations

from aiohttp import web

from ..errors import unknown_path
from ..storage.resources import Registry

# apimachinery's version.Info, keys in its field order: since 1.31 the emulation and minimum compatibility
# versions too (a 1.35 binary emulates 1.35 and stays compatible with 1.34, its defaults).
SERVER_VERSION = {"major": "1", "minor": "35", "emulationMajor": "1", "emulationMinor": "35",
                  "minCompatibilityMajor": "1", "minCompatibilityMinor": "34",
                  "gitVersion": "v1.35.0-localcluster", "gitCommit": "",
                  "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.25",
                  "compiler": "gc", "platform": "linux/amd64"}


def version() -> dict:
    return SERVER_VERSION


def api_versions(host: str) -> dict:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}]}


def _group_entry(name: str, versions: list[str]) -> dict:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def group_list(registry: Registry) -> dict:
    groups = [_group_entry(name, versions) for name, versions in registry.groups().items()]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def group(registry: Registry, name: str) -> dict:
    versions = registry.groups().get(name)
    if not versions:
        raise unknown_path()
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(name, versions)}


def resource_list(registry: Registry, group_name: str, version_name: str) -> dict | None:
    types = registry.in_group_version(group_name, version_name)
    if not types:
        return None
    resources = [entry for rt in types for entry in rt.discovery_entry()]
    group_version = f"{group_name}/{version_name}" if group_name else version_name
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}


async def openapi(registry: Registry, request: web.Request, rest: list[str]) -> web.Response:
    from . import openapi as documents

    return documents.handle(registry, request, rest)
