"""The real API server as the e2e tests' `cluster`: what of localcluster's LocalCluster they use (kubeconfig,
`runner.set_script`, `store.subscribe` and `store.objects` for the pods and PodGroups seen), over the session's
envtest control plane, and the reset that leaves the server as the session found it between tests.

One control plane serves a whole session (its start costs seconds), so each test must leave nothing behind:
`reset` deletes every object made since the baseline taken at the session's start (finalizers removed, no
grace), the namespaces made too (kube-controller-manager's namespace controller empties them), and waits for
them to be gone. The CRDs `apply_crds` installs are kept for the session (establishing one costs a second).

A reset runs after every test on the real server, so its cost is the tier's: the resources to list are
discovered once per set of CRDs (not at every pass), every list and delete of a pass is sent at once, and the
passes after the first list again only the resources that still held something (nothing else writes once the
test's controller and kubelet are stopped: kube-controller-manager only deletes). Which resources to list at all
etcd says, in one request: the keys not there at the session's start name their resources (a key naming none
that is known, as `minions` for nodes, lists them all).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import functools
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
import yaml

from localcluster.testing import pod_scripts, until

from .envtest import ADMIN_TOKEN, ControlPlane
from .http import Http
from .kubelet import TestKubelet

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CRDS = Path(__file__).resolve().parents[2] / "manifests" / "crds"  # the project's: installed for every session
KEPT = {("/api/v1/nodes", pod_scripts.NODE)}  # the test kubelet's Node, registered again by each
# etcd keys a reset leaves: the aggregator's APIServices (one for each group served), the test kubelet's Node
UNLISTED_KEYS = ("/registry/apiregistration.k8s.io/apiservices/", f"/registry/minions/{pod_scripts.NODE}")
SYSTEM = {"default", "kube-system", "kube-public", "kube-node-lease"}


async def listable(http: Http) -> list[str]:
    """The collection path (with {ns} for namespaced resources) of every resource one can list and delete."""
    found: list[str] = []
    _, core = await http.request("GET", "/api/v1")
    roots = [("/api/v1", core)]
    _, groups = await http.request("GET", "/apis")
    for group in (groups or {}).get("groups", []):
        version = group["preferredVersion"]["groupVersion"]
        roots.append((f"/apis/{version}", (await http.request("GET", f"/apis/{version}"))[1]))
    for root, document in roots:
        for resource in (document or {}).get("resources", []):
            if "/" in resource["name"] or "list" not in resource.get("verbs", ()) or "delete" not in resource.get(
                    "verbs", ()):
                continue
            prefix = f"{root}/namespaces/{{ns}}" if resource["namespaced"] else root
            found.append(f"{prefix}/{resource['name']}")
    return found


async def snapshot(http: Http) -> set[str]:
    """The uids of every object on the server now."""
    uids: set[str] = set()
    for path in await listable(http):
        status, listed = await http.request("GET", path.replace("/namespaces/{ns}", ""))
        if status == 200:
            uids.update(item["metadata"].get("uid", "") for item in listed["items"])
    return uids


@dataclass
class Session:
    """What the tests of one session share on its control plane: the uids there before the first test (kept by
    every reset), the CRDs installed for the session, and the listable resources found for that set of CRDs."""

    plane: ControlPlane
    baseline: set[str]
    baseline_keys: set[str]
    kept_crds: set[str] = field(default_factory=set)
    resources: dict[frozenset[str], list[str]] = field(default_factory=dict)


async def etcd_keys(etcd_url: str) -> set[str]:
    """Every key under etcd's /registry/ (the API server's objects), keys only: one request to etcd's JSON gateway."""
    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    async with aiohttp.ClientSession() as session, session.post(
            f"{etcd_url}/v3/kv/range", json={"key": b64("/registry/"), "range_end": b64("/registry0"),
                                             "keys_only": True}) as answer:
        answer.raise_for_status()
        found = await answer.json(content_type=None)
    return {base64.b64decode(kv["key"]).decode() for kv in found.get("kvs") or ()}


def resources_named(paths: list[str], keys: set[str]) -> list[str]:
    """The paths whose resource some key names (those of its group, where the key names one); all of them when a key
    names no resource known."""
    named: set[str] = set()
    for key in keys:
        if key.startswith(UNLISTED_KEYS):
            continue
        segments = set(key.split("/"))
        named_here = [path for path in paths if path.rpartition("/")[2] in segments]
        # a key names its group when the group's resources are stored under it (CRDs'); most built-in ones are not
        hits = [path for path in named_here if path.split("/")[2] in segments] or named_here
        if not hits:
            return paths
        named.update(hits)
    return [path for path in paths if path in named]


def crd_documents(directory: Path) -> list[dict]:
    """The CRDs of a directory's YAML files (each test applies them: parsed once, copied for each)."""
    return copy.deepcopy(_parsed(str(directory)))


@functools.cache
def _parsed(directory: str) -> list[dict]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's: the CRDs are large
    return [doc for path in sorted(Path(directory).glob("*.y*ml")) for doc in yaml.load_all(path.read_text(), loader)
            if doc and doc.get("kind") == "CustomResourceDefinition"]


async def install_crds(http: Http, directory: str | Path, kept: set[str]) -> list[str]:
    """Create (or replace) every CRD of a directory's YAML files but those `kept` (installed earlier in the session,
    unchanged since), all at once (each costs the server seconds), and wait until each is Established; add them
    to `kept`. The names of the directory's CRDs."""
    names = [doc["metadata"]["name"] for doc in _parsed(str(directory))]
    if set(names) - kept:
        await asyncio.gather(*(_apply_crd(http, doc) for doc in crd_documents(Path(directory))
                               if doc["metadata"]["name"] not in kept))
        kept.update(names)
    return names


async def _apply_crd(http: Http, doc: dict, timeout: float = 60.0) -> None:
    """Create (or replace) one CRD and wait until it is Established (its conditions by a watch of it alone: a CRD's
    GET is a large answer to poll)."""
    name = doc["metadata"]["name"]
    status, _ = await http.request("POST", CRD_PATH, doc)
    if status == 409:
        _, current = await http.request("GET", f"{CRD_PATH}/{name}")
        doc["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        status, _ = await http.request("PUT", f"{CRD_PATH}/{name}", doc)
    assert status in (200, 201), f"CRD {name}: {status}"
    selected = f"metadata.name={name}"
    async with asyncio.timeout(timeout):
        while True:
            _, listed = await http.request("GET", CRD_PATH, params={"fieldSelector": selected})
            if any(_established(crd) for crd in listed["items"]):
                return
            async for event in http.watch(CRD_PATH, listed["metadata"]["resourceVersion"], 30, selected):
                if event["type"] in ("ADDED", "MODIFIED") and _established(event["object"]):
                    return


def _established(crd: dict) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or ()
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


class RealCluster:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.plane = session.plane
        self.kept_crds = session.kept_crds
        self.http = Http(self.plane.url, self.plane.ca_pem)
        self.runner = TestKubelet(self.http)
        self.store = self.runner.store
        self.url = self.plane.url

    async def __aenter__(self) -> RealCluster:
        await self.http.__aenter__()
        await self.runner.start()
        return self

    async def __aexit__(self, *exc) -> None:
        try:
            await self.runner.stop()
            await self.reset()
        finally:
            await self.http.__aexit__()

    @property
    def serving(self) -> bool:
        return "kube-apiserver" in self.plane.processes

    async def restart(self, downtime: float = 0.0) -> None:
        """Stop kube-apiserver (SIGTERM, as a rollout does), wait, start it again on the same port and etcd: as
        localcluster's restart. Its watch cache starts afresh; every watch open before ends."""
        await asyncio.to_thread(self.plane.stop_apiserver)
        if downtime:
            await asyncio.sleep(downtime)
        self.plane.spawn_apiserver()  # in this thread, the session's: a thread's child dies with it (envtest.py)

        async def ready() -> bool:
            if self.plane.processes["kube-apiserver"].poll() is not None:
                raise RuntimeError(f"kube-apiserver exited:\n{self.plane.log_tail('kube-apiserver')}")
            return await asyncio.to_thread(self.plane.apiserver_ready)

        await until(ready, 120, "kube-apiserver ready again", interval=0.1)

    def kubeconfig(self, namespace: str = "default", token: str | None = None) -> dict:
        config = self.plane.kubeconfig(token or ADMIN_TOKEN)
        config["contexts"][0]["context"]["namespace"] = namespace
        return config

    def write_kubeconfig(self, path: str | Path, token: str | None = None, namespace: str = "default") -> Path:
        """As LocalCluster's (0600: its token is the admin's), for kubectl."""
        return pod_scripts.write_private_file(path, yaml.safe_dump(self.kubeconfig(namespace, token)))

    async def apply_crds(self, directory: str | Path) -> list[str]:
        """Create (or replace) every CRD in the YAML files of a directory and wait until each is Established."""
        return await install_crds(self.http, directory, self.kept_crds)

    async def _resources(self) -> list[str]:
        kept = frozenset(self.kept_crds)
        if kept not in self.session.resources:
            self.session.resources[kept] = [path for path in await listable(self.http)
                                            if not path.endswith("/apiservices")]  # the aggregator's own
        return self.session.resources[kept]

    async def reset(self, timeout: float = 60.0) -> None:
        """Delete everything made since the baseline (but the kept CRDs) and wait until it is gone."""
        kept = {f"/registry/apiextensions.k8s.io/customresourcedefinitions/{name}" for name in self.kept_crds}
        new = await etcd_keys(self.plane.etcd_url) - self.session.baseline_keys - kept  # (a CRD list is megabytes)
        paths = resources_named(await self._resources(), new)
        left: dict[str, list[str]] = {}
        try:
            async with asyncio.timeout(timeout):
                while paths:
                    found = await asyncio.gather(*(self._delete_new(path) for path in paths))
                    left = {path: names for path, names in zip(paths, found, strict=True) if names}
                    paths = list(left)
                    if paths:
                        await asyncio.sleep(0.05)
        except TimeoutError:
            pytest.fail(f"the server not back to its baseline in {timeout}s; left: {left}", pytrace=False)

    async def _delete_new(self, path: str) -> list[str]:
        """Delete each new object of one resource (its finalizers first); the names of those still there after."""
        status, listed = await self.http.request("GET", path.replace("/namespaces/{ns}", ""))
        if status != 200:
            return []
        new = []
        for item in listed["items"]:
            meta = item["metadata"]
            if meta.get("uid", "") in self.session.baseline or (path == CRD_PATH and meta["name"] in self.kept_crds):
                continue
            if (path, meta["name"]) in KEPT or (path.endswith("/namespaces") and meta["name"] in SYSTEM):
                continue
            new.append(meta)
        remain = await asyncio.gather(*(self._delete(path, meta) for meta in new))
        return [f"{meta.get('namespace', '')}/{meta['name']}" for meta, there in zip(new, remain, strict=True) if there]

    async def _delete(self, path: str, meta: dict) -> bool:
        """Delete one object at once (a pod still terminating too); whether it is still there (a namespace being
        emptied, a finalizer): only those are listed again."""
        own = path.replace("{ns}", meta.get("namespace", "")) + "/" + meta["name"]
        if meta.get("finalizers"):
            await self.http.request("PATCH", own, {"metadata": {"finalizers": None}}, "application/merge-patch+json")
        if meta.get("deletionTimestamp") and not path.endswith("/pods"):
            return True
        status, answer = await self.http.request("DELETE", own, {"gracePeriodSeconds": 0,
                                                                 "propagationPolicy": "Background"})
        if status == 404 or (answer or {}).get("kind") == "Status":
            return False
        # a pod deleted with no grace is answered with its deletionTimestamp, but gone; a namespace is not gone
        # until the namespace controller has emptied it
        left = (answer or {}).get("metadata") or {}
        return status not in (200, 202) or path.endswith("/namespaces") or bool(left.get("finalizers")) or bool(
            left.get("deletionTimestamp") and left.get("deletionGracePeriodSeconds") != 0)
