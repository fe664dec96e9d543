"""What a request is about: its Target (the kind served, namespace, name, subresource), the pods'
selectable fields and connect subresources, and what the layers before dispatch attach to it (its user,
a deprecation)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web

from ..storage.resources import ResourceType

if TYPE_CHECKING:
    pass



JSON = "application/json"
POD_FIELDS = {"status.phase", "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
              "spec.serviceAccountName", "status.podIP", "status.nominatedNodeName"}
# Pod subresources that connect to a container: the runner's method serving each, and its HTTP methods.
POD_CONNECT = {"log": ("pod_log", ("GET",)), "exec": ("pod_exec", ("GET", "POST")),
               "portforward": ("pod_portforward", ("GET", "POST"))}
MAX_FIELD_MANAGER = 128  # bytes (FieldManagerMaxLength)
USER = web.RequestKey("user", object)  # the authenticated auth.User of a request
DEPRECATION = web.RequestKey("deprecation", str)  # the warning a deprecated resource's requests get


@dataclass(slots=True)
class Target:
    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None


