"""The process runner's pod network: each pod an address of its own, and a name table kept current.

When this machine can (preload.find: Linux, a C compiler, nss_wrapper), a pod gets an address from the
cluster's range (addresses.py: a /16 that no other local cluster on this machine holds, claims.py) when it is
scheduled, shown as `status.podIP`; its processes start with the podnet shim and nss_wrapper preloaded
(`environment`), so that they listen on that address when they listen on every address, and resolve the
names of names.py from a hosts file of the pod's own.
Those files are rewritten (whole, then renamed into place: nss_wrapper re-reads a file that changed)
once per loop turn in which a Service or a pod changed, and only when their text changes.

A pod with `hostNetwork: true`, and every pod where the shim cannot be built, shares this machine's
network at 127.0.0.1, as before: `status.podIP` is the host's address, names do not resolve, and two
pods listening on one port collide.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from ...controllers.service_endpoints import endpoint_view
from ...storage.store import DELETED, Event
from ..container_env import HOST_IP
from .addresses import AddressPool
from .claims import NetworkClaim, claim_network
from .names import ServiceEntry, hosts_file, service_table
from .preload import Preload, find

POD_IP_ENV = "LOCALCLUSTER_POD_IP"  # what the shim reads (podnet.c)
# Every variable `environment` may set: what a pod's process gets besides the minimal environment and its spec's.
VARIABLES = ("LD_PRELOAD", POD_IP_ENV, "GRPC_DNS_RESOLVER", "NSS_WRAPPER_HOSTS", "NSS_WRAPPER_HOSTNAME",
             "NSS_WRAPPER_MAX_HOSTENTS")
# nss_wrapper keeps every name of a hosts file in a table of a fixed size, 100 by default: past that it fails to
# read the whole file and resolves nothing. A Service has 4 names in its namespace (names.py), so 100 is ~24
# Services; the file grows after the process starts, so room for far more (a few hundred KB per process).
MAX_NAMES = 20_000
PODS = ("", "pods")
SERVICES = ("", "services")


class PodNetwork:
    def __init__(self, store, enabled: bool = True) -> None:
        self.store = store
        self.enabled = enabled  # False: every pod shares the host's network, whatever the machine has
        self.pool = AddressPool()  # drawn again at start, where the network is claimed
        self.claim: NetworkClaim | None = None
        self.preload = Preload(None, None)
        self.directory: Path | None = None
        self._pods: dict[str, tuple[tuple[str, str], str]] = {}  # uid -> (namespace/name, address)
        self._written: dict[str, str] = {}  # uid -> the text of its hosts file
        self._loop: asyncio.AbstractEventLoop | None = None
        self._refresh_due = False

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self.enabled and self.directory is None:
            self.directory = Path(tempfile.mkdtemp(prefix="localcluster-net-"))  # 0700: the user's alone
            self.preload = find()  # what is missing is said once, in summary(), by whoever starts the cluster
            if self.own_addresses:  # a /16 no other local cluster holds (else, rarely, one drawn at random)
                self.claim = claim_network()
                self.pool = AddressPool(self.claim.octet if self.claim is not None else None)

    def stop(self) -> None:
        if self.claim is not None:  # after the pods' processes are gone (the runner stops them first)
            self.claim.release()
            self.claim = None
        self._loop = None
        self._pods.clear()
        self._written.clear()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None
        self.preload = Preload(None, None)

    @property
    def own_addresses(self) -> bool:
        """Whether pods get addresses of their own (else they share the host's)."""
        return self.preload.shim is not None

    @property
    def names_resolve(self) -> bool:
        return self.preload.shim is not None and self.preload.nss_wrapper is not None

    def summary(self) -> str:
        """One line for a person starting a local run: what pods get, and what is missing."""
        if not self.enabled:
            return "pods share this machine's network (as with hostNetwork: true)"
        if not self.own_addresses:
            return "; ".join(self.preload.missing) or "pods share this machine's network"
        line = f"pods get their own network: an address each in {self.pool.network}"
        if self.names_resolve:
            return line + ", Service and pod names resolve"
        return line + "; " + "; ".join(self.preload.missing)

    # --- pods ------------------------------------------------------------------------------

    def attach(self, pod: dict) -> str:
        """The pod's address (assigned now if it has none yet); its name table written before it starts."""
        meta = pod["metadata"]
        if not self.own_addresses or (pod.get("spec") or {}).get("hostNetwork"):
            return HOST_IP
        uid = meta["uid"]
        ip = self.pool.assign(uid)
        self._pods[uid] = ((meta.get("namespace") or "", meta["name"]), ip)
        if self.names_resolve:
            self._write(uid, pod, ip, self._table())
        return ip

    def detach(self, uid: str) -> None:
        self.pool.release(uid)
        self._pods.pop(uid, None)
        self._written.pop(uid, None)
        if self.directory is not None:
            with contextlib.suppress(FileNotFoundError):
                (self.directory / f"{uid}.hosts").unlink()

    def environment(self, pod: dict) -> dict[str, str]:
        """What the pod's processes need in their environment to be on its network (empty: the host's)."""
        uid = pod["metadata"]["uid"]
        if uid not in self._pods:
            return {}
        _, ip = self._pods[uid]
        env = {"LD_PRELOAD": " ".join(self.preload.libraries), POD_IP_ENV: ip,
               # gRPC (TensorFlow's) resolves with c-ares by default, which reads /etc/hosts and DNS itself and
               # would miss the pod's names; its native resolver asks the C library, which nss_wrapper answers.
               "GRPC_DNS_RESOLVER": "native"}
        if self.names_resolve and self.directory is not None:
            spec = pod.get("spec") or {}
            env.update(NSS_WRAPPER_HOSTS=str(self.directory / f"{uid}.hosts"),
                       NSS_WRAPPER_HOSTNAME=spec.get("hostname") or pod["metadata"]["name"],
                       NSS_WRAPPER_MAX_HOSTENTS=str(MAX_NAMES))
        return env

    # --- keeping the name tables current -------------------------------------------------------

    def on_event(self, ev: Event) -> None:
        if ev.key not in (PODS, SERVICES) or not self._pods or not self.names_resolve or self._loop is None:
            return
        if ev.key == PODS and ev.type != DELETED and endpoint_view(ev.obj) == endpoint_view(ev.old):
            return  # most pod writes (a container's state, Events' counts) move no name
        if not self._refresh_due:
            self._refresh_due = True
            self._loop.call_soon(self._refresh)

    def _table(self) -> list[ServiceEntry]:
        by_namespace: dict[str, list[dict]] = {}
        for pod in self.store.objects(PODS):
            by_namespace.setdefault(pod["metadata"].get("namespace") or "", []).append(pod)
        return service_table(self.store.objects(SERVICES), by_namespace)

    def _refresh(self) -> None:
        self._refresh_due = False
        if not self._pods or self.directory is None:
            return
        table = self._table()
        for uid, (key, ip) in list(self._pods.items()):
            pod = self.store.get(PODS, key)
            if pod is not None and pod["metadata"]["uid"] == uid:
                self._write(uid, pod, ip, table)

    def _write(self, uid: str, pod: dict, ip: str, table: list[ServiceEntry]) -> None:
        assert self.directory is not None
        text = hosts_file(pod, ip, table)
        if self._written.get(uid) == text:
            return
        path = self.directory / f"{uid}.hosts"
        part = path.with_suffix(".part")
        part.write_text(text)
        os.replace(part, path)
        self._written[uid] = text
