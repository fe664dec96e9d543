"""ConfigMap and Secret volumes of a process pod: their files written where the pod's processes find them.

A process has no mount namespace, so a volume cannot appear at its `mountPath` (`/etc/mpi`, `/root/.ssh`):
that would write this machine's own directories. Each container's volumes are written instead under a
directory of its own, the mount path kept below it (`<root>/<pod uid>/<container>/etc/mpi/hostfile`), and
the container is told where: every `mountPath` in its environment's values, its command and its args (as a
whole word or the start of a longer path: `/etc/mpi/hostfile`, `--hostfile=/etc/mpi/hostfile`) is rewritten to
that directory before the process starts. A program that opens a path written in its own code, not given to
it, does not find the files.

As the kubelet does, the files follow their object: a ConfigMap or Secret that changes is written again
(each file whole, then renamed into place), and a key that goes loses its file. `items` choose keys and their
paths, `defaultMode` and an item's `mode` their permissions (0644 when unset; readOnly is not enforced);
`subPath` mounts one file or directory of the volume. Projected, downwardAPI and every other volume type are
not written (their mount paths are left as they are).
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

Objects = Callable[[str, str], dict | None]  # (plural, name) -> the object in the pod's namespace, or None
DEFAULT_MODE = 0o644


def _files(volume: dict, obj: dict | None) -> dict[str, tuple[bytes, int]] | None:
    """The volume's files, {relative path: (content, mode)}; None if it is no ConfigMap or Secret volume."""
    if volume.get("configMap") is not None:
        source = volume["configMap"]
        values = {k: v.encode() for k, v in ((obj or {}).get("data") or {}).items()}
        values.update({k: base64.b64decode(v) for k, v in ((obj or {}).get("binaryData") or {}).items()})
    elif volume.get("secret") is not None:
        source = volume["secret"]
        values = {k: base64.b64decode(v) for k, v in ((obj or {}).get("data") or {}).items()}
    else:
        return None
    mode = source.get("defaultMode")
    mode = DEFAULT_MODE if mode is None else int(mode)
    items = source.get("items")
    if not items:
        return {key: (value, mode) for key, value in values.items()}
    chosen = {}
    for item in items:
        if item.get("key") in values:
            item_mode = item.get("mode")
            chosen[item.get("path") or item["key"]] = (values[item["key"]], mode if item_mode is None else
                                                       int(item_mode))
    return chosen


def _source(volume: dict) -> tuple[str, str] | None:
    """(plural, name) of the object a ConfigMap or Secret volume shows."""
    if volume.get("configMap") is not None:
        return "configmaps", volume["configMap"].get("name") or ""
    if volume.get("secret") is not None:
        return "secrets", volume["secret"].get("secretName") or ""
    return None


def sources(pod: dict) -> set[tuple[str, str]]:
    """Every (plural, name) the pod's volumes show."""
    return {found for v in (pod.get("spec") or {}).get("volumes") or () if (found := _source(v)) is not None}


class PodVolumes:
    """The volumes of the pods of one runner, under a directory of its own while it runs (`start`), which only
    its user may enter: Secrets' files are in it."""

    def __init__(self) -> None:
        self._root: Path | None = None

    def start(self) -> None:
        self._root = Path(tempfile.mkdtemp(prefix="localcluster-volumes-"))

    def stop(self) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    @property
    def root(self) -> Path:
        assert self._root is not None, "the runner has not started"
        return self._root

    def container_root(self, pod: dict, container: str) -> Path:
        return self.root / pod["metadata"]["uid"] / container

    def write(self, pod: dict, objects: Objects) -> None:
        """Write (again) every ConfigMap and Secret volume of every container of the pod."""
        if self._root is None:
            return
        spec = pod.get("spec") or {}
        volumes = {v.get("name"): v for v in spec.get("volumes") or ()}
        for container in (*(spec.get("initContainers") or ()), *(spec.get("containers") or ())):
            base = self.container_root(pod, container["name"])
            for mount in container.get("volumeMounts") or ():
                volume = volumes.get(mount.get("name"))
                source = _source(volume) if volume is not None else None
                if volume is None or source is None:
                    continue
                files = _files(volume, objects(*source)) or {}
                sub = mount.get("subPath") or ""
                if sub:
                    files = {str(Path(p).relative_to(sub)) if p != sub else "": f for p, f in files.items()
                             if p == sub or p.startswith(sub + "/")}
                _write_tree(base / mount["mountPath"].lstrip("/"), files)

    def forget(self, uid: str) -> None:
        if self._root is not None:
            shutil.rmtree(self._root / uid, ignore_errors=True)

    def rewrite(self, pod: dict, container: dict, argv: list[str], env: dict[str, str]) -> tuple[list[str],
                                                                                              dict[str, str]]:
        """argv and env with each ConfigMap or Secret volume's mount path where its files are written."""
        volumes = {v.get("name") for v in (pod.get("spec") or {}).get("volumes") or () if _source(v) is not None}
        paths = sorted({m["mountPath"].rstrip("/") or "/" for m in container.get("volumeMounts") or ()
                        if m.get("name") in volumes and m.get("mountPath")}, key=len, reverse=True)
        if not paths or self._root is None:
            return argv, env
        base = str(self.container_root(pod, container["name"]))
        # A mount path at the start of a word or after `=` or `:`, ending the word or followed by `/`.
        pattern = re.compile(r"(?<![^\s=:'\"])(" + "|".join(re.escape(p) for p in paths) + r")(?=$|[/\s:'\"])")

        def moved(text: str) -> str:
            return pattern.sub(lambda m: base + m.group(1), text)

        return [moved(a) for a in argv], {k: moved(v) for k, v in env.items()}


def _write_tree(directory: Path, files: dict[str, tuple[bytes, int]]) -> None:
    """Make `directory` hold exactly `files` (a subPath of one file: the key "" is the directory's path, a file)."""
    if "" in files:
        content, mode = files[""]
        _write_file(directory, content, mode)
        return
    directory.mkdir(parents=True, exist_ok=True)
    for relative, (content, mode) in files.items():
        _write_file(directory / relative, content, mode)
    wanted = {directory / p for p in files}
    for path in list(directory.rglob("*")):
        if path.is_file() and path not in wanted:
            with contextlib.suppress(OSError):
                path.unlink()


def _write_file(path: Path, content: bytes, mode: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        if path.read_bytes() == content and (path.stat().st_mode & 0o777) == mode:
            return
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.part")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(content)
    os.chmod(part, mode)
    os.replace(part, path)
