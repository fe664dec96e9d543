"""What a kubelet works out before it starts a container: its environment, its command, its volumes' sources.

The environment is built as the kubelet's makeEnvironmentVariables builds it: `envFrom` first
(every key of a ConfigMap's `data` or a Secret's `data`, behind the source's `prefix`), then `env`
in order, later names winning: plain `value`s with `$(VAR)` expanded against the variables before
them, `fieldRef`s to the pod, and `configMapKeyRef` / `secretKeyRef` keys. What cannot be resolved
raises ConfigError with the kubelet's message (`secret "x" not found`, `couldn't find key k in
Secret ns/x`); a source or key marked `optional` may be missing. The runner reports a ConfigError
as CreateContainerConfigError and tries again later, as the kubelet does: the container starts
once the Secret appears.

The process starts with a minimal environment, not the server's (which may hold cloud keys and
tokens that anyone allowed to create a pod could read): `base_environment()` gives PATH, HOME and
LANG from the server's environment (so the commands and the interpreter the developer runs are
found), or a container runtime's defaults where unset, and TMPDIR if set (a container has a /tmp
of its own; these processes share the host's, so their temporary files go where the developer's
do); then `HOSTNAME` and what the spec declares.
As on a cluster, every pod is told where the API server is (`KUBERNETES_SERVICE_HOST`,
`KUBERNETES_SERVICE_PORT` and the `KUBERNETES_PORT*` forms the kubelet writes for the `kubernetes`
Service): here, the address localcluster listens on rather than a Service's cluster IP, which would
lead nowhere. The service-link variables of other Services are not set (their names resolve instead).

Volumes are not mounted (a process sees the host's files), but a Secret or ConfigMap volume whose
object is missing holds the pod in ContainerCreating until it exists, as the kubelet's mount does
(`missing_volume_source`).
"""

from __future__ import annotations

import base64
import errno
import os
import pwd
from collections.abc import Callable, Mapping

from .runner import NODE

HOST_IP = POD_IP = "127.0.0.1"

# (plural, name) -> the object of that kind and name in the pod's namespace, or None.
Objects = Callable[[str, str], dict | None]


class ConfigError(Exception):
    """What a kubelet reports as CreateContainerConfigError."""


# What a pod's process takes from the server's environment; nothing else of it reaches a pod.
INHERITED = ("PATH", "HOME", "LANG", "TMPDIR")
# containerd's default PATH for an image that sets none (oci.DefaultEnv), and a locale every libc has.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEFAULT_LANG = "C.UTF-8"


def api_server_variables(address: tuple[str, int] | None) -> dict[str, str]:
    """What the kubelet tells every pod of the API server (the `kubernetes` Service's links), for `address`."""
    if address is None:
        return {}
    host, port = address
    url = f"tcp://{host}:{port}"
    return {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": str(port),
            "KUBERNETES_SERVICE_PORT_HTTPS": str(port), "KUBERNETES_PORT": url, f"KUBERNETES_PORT_{port}_TCP": url,
            f"KUBERNETES_PORT_{port}_TCP_PROTO": "tcp", f"KUBERNETES_PORT_{port}_TCP_PORT": str(port),
            f"KUBERNETES_PORT_{port}_TCP_ADDR": host}


def base_environment(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """PATH, HOME, LANG (and TMPDIR) as the server has them, or defaults: what every container's process
    starts with."""
    env = {name: environ[name] for name in INHERITED if environ.get(name)}
    env.setdefault("PATH", DEFAULT_PATH)
    env.setdefault("LANG", DEFAULT_LANG)
    if "HOME" not in env:
        try:
            env["HOME"] = pwd.getpwuid(os.getuid()).pw_dir
        except KeyError:  # a uid without a passwd entry: runc's fallback
            env["HOME"] = "/"
    return env


# --- $(VAR) expansion, as k8s.io/kubernetes/third_party/forked/golang/expansion ----------------------


def expand(text: str, env: dict[str, str]) -> str:
    """Expand `$(VAR)` from `env`; `$$` is a literal `$`; unknown or unterminated references stay as written."""
    out: list[str] = []
    checkpoint = 0
    cursor = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            rest = text[cursor + 1:]
            if rest[0] == "$":
                out.append("$")
                advance = 1
            elif rest[0] == "(":
                close = rest.find(")", 1)
                if close < 0:
                    out.append("$(")
                    advance = 1
                else:
                    name = rest[1:close]
                    out.append(env[name] if name in env else f"$({name})")
                    advance = close + 1
            else:
                out.append("$" + rest[0])
                advance = 1
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    out.append(text[checkpoint:])
    return "".join(out)


# --- fieldRef ------------------------------------------------------------------------------------------


def _split_subscript(path: str) -> tuple[str, str | None]:
    """`metadata.labels['k']` -> ("metadata.labels", "k"), as fieldpath.SplitMaybeSubscriptedPath."""
    if not path.endswith("']"):
        return path, None
    head, sep, key = path[:-2].partition("['")
    if not sep or not head:
        return path, None
    return head, key


def field_value(pod: dict, path: str) -> str:
    meta, spec = pod["metadata"], pod.get("spec") or {}
    head, key = _split_subscript(path)
    if key is not None and head in ("metadata.labels", "metadata.annotations"):
        return str((meta.get(head.split(".")[1]) or {}).get(key, ""))
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName") or NODE,
        "spec.serviceAccountName": spec.get("serviceAccountName") or spec.get("serviceAccount") or "default",
        "status.hostIP": HOST_IP,
        "status.hostIPs": HOST_IP,
        # The address the runner gave the pod (its own, or the host's) is in its status before any container starts.
        "status.podIP": (pod.get("status") or {}).get("podIP") or POD_IP,
        "status.podIPs": ",".join(a["ip"] for a in (pod.get("status") or {}).get("podIPs") or ()) or POD_IP,
    }
    if path not in simple:
        raise ConfigError(f'unsupported fieldPath "{path}" (the process runner provides '
                          f"{', '.join(sorted(simple))}, metadata.labels['KEY'] and metadata.annotations['KEY'])")
    return str(simple[path] or "")


# --- ConfigMaps and Secrets ----------------------------------------------------------------------------

# The kinds a container may read, as the kubelet's caches name them in their NotFound errors.
SOURCES = {"configMap": ("configmaps", "configmap", "ConfigMap"), "secret": ("secrets", "secret", "Secret")}


def _values(kind: str, obj: dict) -> dict[str, str]:
    """A ConfigMap's `data`, or a Secret's `data` decoded (bytes that are not UTF-8 survive as surrogates)."""
    if kind == "configMap":
        return dict(obj.get("data") or {})
    return {key: base64.b64decode(value).decode("utf-8", "surrogateescape")
            for key, value in (obj.get("data") or {}).items()}


def _source(objects: Objects, kind: str, name: str, optional: bool) -> dict[str, str] | None:
    """The values of the named ConfigMap or Secret; None if it is missing and optional."""
    plural, word, _ = SOURCES[kind]
    obj = objects(plural, name)
    if obj is None:
        if optional:
            return None
        raise ConfigError(f'{word} "{name}" not found')
    return _values(kind, obj)


def _key_ref(pod: dict, objects: Objects, kind: str, ref: dict) -> str | None:
    """The value a configMapKeyRef or secretKeyRef names; None if it may be missing and is."""
    name, key, optional = ref.get("name") or "", ref.get("key") or "", bool(ref.get("optional"))
    values = _source(objects, kind, name, optional)
    if values is None:
        return None
    if key not in values:
        if optional:
            return None
        raise ConfigError(f"couldn't find key {key} in {SOURCES[kind][2]} {pod['metadata'].get('namespace')}/{name}")
    return values[key]


def container_env(pod: dict, container: dict, objects: Objects) -> dict[str, str]:
    """The container's declared environment, in the kubelet's order (envFrom, then env)."""
    env: dict[str, str] = {}
    for source in container.get("envFrom") or ():
        for kind in SOURCES:
            ref = source.get(f"{kind}Ref")
            if ref is not None:
                values = _source(objects, kind, ref.get("name") or "", bool(ref.get("optional")))
                prefix = source.get("prefix") or ""
                env.update({prefix + key: value for key, value in (values or {}).items()})
    for var in container.get("env") or ():
        name = var.get("name") or ""
        source = var.get("valueFrom")
        if not source:
            env[name] = expand(str(var.get("value") or ""), env)
            continue
        if "fieldRef" in source:
            env[name] = field_value(pod, (source.get("fieldRef") or {}).get("fieldPath", ""))
            continue
        key_kind = next((k for k in SOURCES if f"{k}KeyRef" in source), None)
        if key_kind is None:
            unsupported = next(iter(source), "valueFrom")
            raise ConfigError(f"env {name}: valueFrom.{unsupported} is not supported by the process runner "
                              f"(value, fieldRef, configMapKeyRef and secretKeyRef are)")
        value = _key_ref(pod, objects, key_kind, source[f"{key_kind}KeyRef"])
        if value is not None:
            env[name] = value
    return env


def container_command(pod: dict, container: dict, objects: Objects) -> tuple[list[str], dict[str, str]]:
    """argv (command + args, expanded) and the declared environment; ConfigError if it cannot be run."""
    if container.get("restartPolicy") == "Always":
        raise ConfigError("sidecar init containers (restartPolicy: Always) are not supported by the process runner")
    env = container_env(pod, container, objects)
    parts = [*(container.get("command") or ()), *(container.get("args") or ())]
    if not parts:
        raise ConfigError("the container has no command: the process runner ignores images, so it runs "
                          "command + args and needs at least one of them")
    return [expand(str(part), env) for part in parts], env


def missing_volume_source(pod: dict, objects: Objects) -> str | None:
    """The kubelet's FailedMount message for the first ConfigMap or Secret volume whose object is missing."""
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        refs = []
        if volume.get("secret") is not None:
            refs.append(("secret", volume["secret"].get("secretName") or "", volume["secret"].get("optional")))
        if volume.get("configMap") is not None:
            refs.append(("configMap", volume["configMap"].get("name") or "", volume["configMap"].get("optional")))
        for projected in ((volume.get("projected") or {}).get("sources") or ()):
            refs += [(kind, projected[kind].get("name") or "", projected[kind].get("optional"))
                     for kind in SOURCES if projected.get(kind) is not None]
        for kind, name, optional in refs:
            plural, word, _ = SOURCES[kind]
            if not optional and objects(plural, name) is None:
                return f'MountVolume.SetUp failed for volume "{volume.get("name")}" : {word} "{name}" not found'
    return None


# --- starting the process -----------------------------------------------------------------------------


# What containerd (1.6, 1.7) wraps runc's (1.1) error in, as the kubelet reports it in a StartError's message.
CONTAINERD_START = ("failed to create containerd task: failed to create shim task: OCI runtime create failed: "
                    "runc create failed: unable to start container process: ")
CONTAINERD_CODE = ": unknown"  # the gRPC status containerd appends


def start_error(argv0: str, cwd: str | None, exc: OSError) -> str:
    """Why the process could not be started, as a kubelet with containerd says it (the StartError message): runc's
    words in containerd's wrapping, e.g. `failed to create containerd task: ... unable to start container process:
    exec: "x": executable file not found in $PATH: unknown`."""
    return f"{CONTAINERD_START}{runc_error(argv0, cwd, exc)}{CONTAINERD_CODE}"


def runc_error(argv0: str, cwd: str | None, exc: OSError) -> str:
    """Why the process could not be started, in the words of runc."""
    reason = (exc.strerror or str(exc)).lower()
    if cwd and exc.filename == cwd:
        return f'chdir to cwd ("{cwd}") set in config.json failed: {reason}'
    if exc.errno == errno.ENOENT:
        if "/" in argv0:
            return f'exec: "{argv0}": stat {argv0}: no such file or directory'
        return f'exec: "{argv0}": executable file not found in $PATH'
    return f'exec: "{argv0}": {reason}'
