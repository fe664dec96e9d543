"""A container that could not be started, said in the runtime's own words, condensed for the job.

A command that does not exist ends its container before it runs: containerd's kubelet reports it terminated with
exit code 128, reason `StartError` (dockershim and cri-dockerd: `ContainerCannotRun`), and the runtime's error as
the state's `message`; CRI-O fails earlier, leaving the container waiting with `CreateContainerError` (and a
start that fails may show `RunContainerError` meanwhile). The exit code alone says nothing a user can act on; the
message does, but wrapped in every layer it passed through:

    failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed:
    unable to start container process: exec: "train": executable file not found in $PATH: unknown

`condensed` keeps what runc said (`exec: "train": executable file not found in $PATH`), the part that names the
cause, and bounds it: a message that names no runc step is kept whole, up to the bound. Only these reasons' messages
are quoted: a container that ran and failed may carry its own termination message (a log tail with
FallbackToLogsOnError), which is the user's output, not a cause the controller should repeat.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

START_ERRORS = frozenset({"StartError", "ContainerCannotRun"})  # terminated reasons
START_WAITS = frozenset({"CreateContainerError", "RunContainerError"})  # waiting reasons
MESSAGE_MAX = 300  # characters of the runtime's message quoted, as waiting.py keeps the kubelet's

# The last step before runc's own words: runc 1.1 (`unable to start container process:`), runc 1.2 (`error during
# container init:`), runc 1.0 and Docker (`starting container process caused:`, or `caused "..."` quoted).
_RUNC_STEP = re.compile(r'(?:unable to start container process|error during container init'
                        r'|starting container process caused):? ("?)')
_GRPC_CODE = ": unknown"  # the gRPC status containerd appends to every error it passes on


def condensed(message: str) -> str:
    """What runc said of a container that could not start (the whole message if it names no runc step), bounded."""
    text = message.strip()
    last = next(reversed([*_RUNC_STEP.finditer(text)]), None)  # the innermost step: the runtime nests its errors
    if last is not None:
        said = text[last.end():].removesuffix(_GRPC_CODE).rstrip()
        if last.group(1) or '\\"' in said:  # quoted: Docker's `caused "..."`, CRI-O's `msg="..."`
            said = said.replace('\\"', '"').removesuffix('"')
        text = said or text  # (runc said nothing after all: the whole message)
    return text if len(text) <= MESSAGE_MAX else text[:MESSAGE_MAX - 1] + "…"


def said(state: Mapping) -> str:
    """`StartError: exec: ...` for a container state (`{terminated: ...}` or `{waiting: ...}`) that says its container
    could not start; "" for any other."""
    for key, reasons in (("terminated", START_ERRORS), ("waiting", START_WAITS)):
        detail = state.get(key) or {}
        reason = str(detail.get("reason") or "")
        if reason in reasons:
            message = condensed(str(detail.get("message") or ""))
            return f"{reason}: {message}" if message else reason
    return ""


def container_state(pod: Mapping | None, name: str | None) -> dict:
    """The state of the pod's container `name` (`{}` if none is reported)."""
    for status in ((pod or {}).get("status") or {}).get("containerStatuses") or ():
        if status.get("name") == name:
            return status.get("state") or {}
    return {}


def waiting_start(pod: Mapping | None) -> str:
    """`CreateContainerError: ...` for the first container of the pod held waiting because it could not start."""
    for status in ((pod or {}).get("status") or {}).get("containerStatuses") or ():
        if (words := said({"waiting": (status.get("state") or {}).get("waiting")})):
            return words
    return ""
