"""LocalCluster: the store, the API, GC, the pod runner and the HTTP server, started together."""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
import secrets
import ssl
from pathlib import Path

import orjson
import yaml
from aiohttp import web

from apimachinery.serving import BoundedSite, ConnectionLimits, runner_options

from .api import CRD_KEY, SYSTEM_NAMESPACES, Api
from .auth.credentials import Credentials
from .auth.kubeconfig_file import write_private_file
from .controllers.bootstrap import create_system_objects
from .controllers.deployments import DeploymentController
from .controllers.endpoints import EndpointsController
from .controllers.gc import GarbageCollector
from .controllers.namespace_objects import NamespaceObjects
from .controllers.replicasets import ReplicaSetController
from .endpoints.access import Access
from .endpoints.faults import Faults
from .endpoints.http import HttpApi, json_response
from .errors import ApiError
from .kubelet.process_guard import make_undumpable
from .kubelet.process_runner import make_runner
from .kubelet.runner import ScriptedRunner
from .storage.audit import DEFAULT_SIZE as AUDIT_SIZE
from .storage.audit import AuditLog
from .storage.resources import Registry
from .storage.store import Store
from .storage.watch import WatchHub

log = logging.getLogger("localcluster")


@functools.lru_cache(maxsize=32)
def _crds_in(path: str, mtime_ns: int, size: int) -> bytes:
    """The CRDs of a YAML file as JSON, parsed once per version of the file: every test's cluster applies the
    same large CRDs (they embed a pod template), and JSON is read back far sooner than YAML (libyaml's parser
    too, when PyYAML has it)."""
    with open(path) as f:
        docs = yaml.load_all(f.read(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        return orjson.dumps([doc for doc in docs if doc and doc.get("kind") == "CustomResourceDefinition"],
                            default=str)


class LocalCluster:
    def __init__(self, host: str = "127.0.0.1", port: int = 0, runner: str = "none",
                 history_size: int = 10_000, bookmark_interval: float = 60.0, watch_buffer: int = 100_000,
                 default_script: dict | list | None = None, disable_admission_plugins: tuple[str, ...] = (),
                 tls: bool = True, audit_size: int = AUDIT_SIZE, endpoint_controllers: bool | None = None,
                 close_slow_watchers: bool = True) -> None:
        self.host = host
        # HTTPS with a self-signed certificate (kubeconfig() carries it). `tls=False` (plain HTTP) is for
        # benchmarks only: the token is required all the same, and kubectl sends none over plain HTTP.
        self.tls = tls
        # The only key to everything (user admin in system:masters): random, this instance's own.
        self.admin_token = secrets.token_urlsafe(32)
        self.certificate: bytes | None = None
        self._ssl: ssl.SSLContext | None = None
        self.port = port
        self.bookmark_interval = bookmark_interval
        self.watch_buffer = watch_buffer
        # A watcher whose client does not keep up is closed as the cacher closes it (storage/watch.py); False for
        # a benchmark that measures how fast a client reads, however far behind it falls.
        self.close_slow_watchers = close_slow_watchers
        self.store = Store(history_size)
        self.registry = Registry()
        self.api = Api(self.store, self.registry)
        self.hub = WatchHub()
        self.faults = Faults()
        self.gc = GarbageCollector(self.api)
        self.deployments = DeploymentController(self.api)
        self.replicasets = ReplicaSetController(self.api)
        # The endpoints and EndpointSlice controllers run by default where pods have addresses of their own (the
        # process runner's pod network); elsewhere they are asked for. They write ~7 objects a Service over its
        # life, which in a burst of scripted pods tripled the server's CPU (kube-controller-manager's own cost,
        # here on the server's one core), and the bursts measure the controller against a floor on this server.
        if endpoint_controllers is None:
            endpoint_controllers = runner == "process"
        self.endpoints = EndpointsController(self.api) if endpoint_controllers else None
        self.runner = make_runner(runner, self.api, default_script)
        for listener in (self.hub.on_event, self.gc.on_event, self.deployments.on_event, self.replicasets.on_event,
                         *((self.endpoints.on_event,) if self.endpoints is not None else ()), self.runner.on_event):
            self.store.subscribe(listener)
        # The last audit_size writes to pods, Services and custom objects (GET /_localcluster/audit).
        self.audit = AuditLog(audit_size)
        self.store.subscribe(self.audit.on_event)
        # Subscribed last: the aggregation controller writes from its listener, after the others saw the event.
        self.access = Access(self.api, self.admin_token, tuple(disable_admission_plugins))
        # The default ServiceAccount and kube-root-ca.crt of every namespace; it writes from its listener too.
        self.namespace_objects = NamespaceObjects(self.api, lambda: self.certificate)
        self.store.subscribe(self.namespace_objects.on_event)
        self.http = HttpApi(self)
        # Connections: how many, how long a handshake and a request's head may take (apimachinery/serving.py).
        self.connection_limits = ConnectionLimits()
        self.site: BoundedSite | None = None
        self._site_runner: web.AppRunner | None = None
        self._started = False

    # --- lifecycle -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    @property
    def watch_cache_rv(self) -> int:
        """The revision the watch caches started at, when the server last (re)started."""
        return self.api.watch_cache.server_start

    @property
    def serving(self) -> bool:
        return self._site_runner is not None

    async def start(self) -> None:
        if not self._started:
            make_undumpable()  # pods, this user's processes, kept out of its memory and environment: process_guard
            # The serving certificate first: every namespace's kube-root-ca.crt is written with it, before
            # the watch cache's starting revision (nothing the server writes while starting comes after it).
            self._ensure_certificate()
            for name in SYSTEM_NAMESPACES:
                self.api.ensure_namespace(name)
            self.access.bootstrap()
            create_system_objects(self.api)  # the system PriorityClasses, the kubernetes Service
            self.gc.start()
            self.deployments.start()
            self.replicasets.start()
            if self.endpoints is not None:
                self.endpoints.start()
            self.runner.start()
            self._started = True
        await self._listen()

    def _ensure_certificate(self) -> None:
        if self.tls and self._ssl is None:
            from .auth.tls import self_signed

            self._ssl, self.certificate = self_signed(self.host)

    async def _listen(self) -> None:
        runner = web.AppRunner(self.http.app(), access_log=None, shutdown_timeout=0.5,
                               **runner_options(self.connection_limits))
        await runner.setup()
        self._ensure_certificate()
        site = BoundedSite(runner, self.host, self.port, self._ssl, self.connection_limits)
        await site.start()
        self.site = site
        self.port = runner.addresses[0][1]
        self._site_runner = runner
        wildcard = self.host in ("", "0.0.0.0", "::")
        self.runner.api_address = ("127.0.0.1" if wildcard else self.host, self.port)

    async def _unlisten(self) -> None:
        if self._site_runner is not None:
            self.hub.close_all()
            runner, self._site_runner = self._site_runner, None
            await runner.cleanup()

    async def stop(self) -> None:
        await self._unlisten()
        await self.gc.stop()
        await self.deployments.stop()
        await self.replicasets.stop()
        if self.endpoints is not None:
            await self.endpoints.stop()
        await self.runner.stop()
        await self.api.webhooks.client.close()
        self._started = False

    async def restart(self, downtime: float = 0.0) -> None:
        """Stop serving (every connection drops), wait, serve again on the same port, as an apiserver restarts.

        etcd keeps everything: objects, resourceVersions and the history, so a paginated list at an
        old version is still served at that version until compaction (`expire_history`). The watch
        cache starts afresh at the latest revision: a watch from any older version gets 410.
        """
        await self._unlisten()
        if downtime:
            await asyncio.sleep(downtime)
        self.api.watch_cache.restart_server(self.store.rv)
        await self._listen()

    def expire_history(self) -> int:
        """Compact everything: watches from any earlier version and open continue tokens get 410."""
        self.store.expire_history()
        return self.store.compacted_rv

    def drop_watches(self) -> int:
        return self.hub.close_all()

    async def __aenter__(self) -> LocalCluster:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    # --- conveniences ----------------------------------------------------------------------

    def add_token(self, token: str, user: str, groups=(), expires_in: float | None = None) -> str:
        """Make `token` authenticate as `user` in `groups` (and system:authenticated), for `expires_in` seconds
        if given (exactly: tests of credentials that refresh; TokenRequest keeps its 10-minute minimum)."""
        return self.access.authenticator.add_token(token, user, groups, expires_in)

    def revoke_token(self, token: str) -> None:
        """`token` authenticates no more (401), as a deleted static token or a revoked credential."""
        self.access.authenticator.revoke_token(token)

    def client_certificate(self, user: str, groups=(), lifetime: float = 3600.0) -> tuple[bytes, bytes]:
        """A client certificate (PEM) for `user` in `groups` (CN and O, as the apiserver reads them), valid for
        `lifetime` seconds, and its key (PEM): signed by the client CA every cluster of this process trusts."""
        from .auth.client_certificates import client_ca

        return client_ca().issue(user, tuple(groups), lifetime)

    def service_account_token(self, namespace: str, name: str) -> str:
        """A token of ServiceAccount NAMESPACE/NAME (created if missing; the token stops working when it is
        deleted): user system:serviceaccount:NS:NAME in system:serviceaccounts and system:serviceaccounts:NS."""
        rt = self.registry.builtin("", "v1", "serviceaccounts")
        if self.store.get(rt.storage_key, (namespace, name)) is None:
            self.api.ensure_namespace(namespace)
            self.api.create(rt, namespace, {"apiVersion": "v1", "kind": "ServiceAccount",
                                            "metadata": {"name": name, "namespace": namespace}})
        return self.access.authenticator.service_account_token(namespace, name)

    @property
    def credentials(self) -> Credentials:
        """URL, admin token and certificate, for raw HTTP clients (tests, benchmarks)."""
        return Credentials(self.url, self.admin_token, self.certificate)

    @property
    def admin_headers(self) -> dict[str, str]:
        """The admin token's Authorization header."""
        return {"Authorization": f"Bearer {self.admin_token}"}

    def session(self, base_url: bool = False, **kwargs):
        """An aiohttp.ClientSession as the admin (token sent, certificate trusted); see Credentials.session."""
        return self.credentials.session(base_url, **kwargs)

    def kubeconfig(self, namespace: str = "default", token: str | None = None) -> dict:
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "localcluster", "cluster": self._cluster_entry()}],
            "users": [{"name": "localcluster", "user": {"token": token or self.admin_token}}],
            "contexts": [{"name": "localcluster",
                          "context": {"cluster": "localcluster", "user": "localcluster", "namespace": namespace}}],
            "current-context": "localcluster",
        }

    def _cluster_entry(self) -> dict:
        entry = {"server": self.url}
        if self.certificate is not None:
            entry["certificate-authority-data"] = base64.b64encode(self.certificate).decode()
        return entry

    def write_kubeconfig(self, path: str | Path, token: str | None = None, namespace: str = "default") -> Path:
        """Write kubeconfig() readable by this user only (0600; a directory made for it is 0700): its token
        lets whoever reads it run processes as this user. A link at `path` is replaced, not followed; a directory
        others may write is refused (auth/kubeconfig_file.py)."""
        return write_private_file(path, yaml.safe_dump(self.kubeconfig(namespace, token)))

    def apply_crds(self, directory: str | Path) -> list[str]:
        """Create (or replace) every CRD found in the YAML files of a directory."""
        rt = self.registry.builtin(CRD_KEY[0], "v1", CRD_KEY[1])
        names = []
        for path in sorted(Path(directory).glob("*.y*ml")):
            stat = path.stat()
            for doc in orjson.loads(_crds_in(str(path), stat.st_mtime_ns, stat.st_size)):
                name = doc["metadata"]["name"]
                try:
                    self.api.create(rt, None, doc)
                except ApiError as err:
                    if err.code != 409:
                        raise
                    current = self.api.get(rt, None, name)
                    doc["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                    self.api.update(rt, None, name, doc)
                names.append(name)
        return names

    # --- admin endpoints, for tests and benchmarks in other processes ----------------------

    def _issue_token(self, body: dict) -> str:
        """`{"serviceAccount": "NS/NAME"}` or `{"user": U, "groups": [...], "token": optional,
        "expirationSeconds": optional}` (any positive number: this endpoint is for tests, system:masters only)."""
        if body.get("serviceAccount"):
            namespace, _, name = str(body["serviceAccount"]).partition("/")
            if not namespace or not name:
                raise ApiError(400, "BadRequest", 'serviceAccount must be "NAMESPACE/NAME"')
            return self.service_account_token(namespace, name)
        if not body.get("user"):
            raise ApiError(400, "BadRequest", 'give "serviceAccount": "NS/NAME" or "user" (and "groups")')
        expires_in = body.get("expirationSeconds")
        if expires_in is not None and (isinstance(expires_in, bool) or not isinstance(expires_in, int | float)
                                       or expires_in <= 0):
            raise ApiError(400, "BadRequest", "expirationSeconds must be a positive number")
        return self.add_token(body.get("token") or "u." + secrets.token_urlsafe(24), str(body["user"]),
                              tuple(body.get("groups") or ()), expires_in)

    async def admin(self, request: web.Request, segs: list[str]) -> web.Response:
        action = segs[0] if segs else ""
        body = orjson.loads(await request.read() or b"{}") if request.method == "POST" else {}
        if action == "faults" and request.method == "POST":
            self.faults.configure(**body)
            return json_response(self.faults.describe())
        if action == "faults":
            return json_response(self.faults.describe())
        if action == "drop-watches" and request.method == "POST":
            return json_response({"dropped": self.drop_watches()})
        if action == "expire-history" and request.method == "POST":
            return json_response({"compactedResourceVersion": self.expire_history()})
        if action == "restart" and request.method == "POST":
            downtime = float(body.get("downtime", 0.5))
            asyncio.get_running_loop().create_task(self.restart(downtime))
            return json_response({"restarting": True, "downtime": downtime})
        if action == "scripts" and request.method == "POST":
            if not isinstance(self.runner, ScriptedRunner):
                raise ApiError(400, "BadRequest", "the pod runner is not scripted")
            for pattern, script in body.items():
                self.runner.set_script(pattern, script)
            return json_response({"scripts": len(self.runner.scripts)})
        if action == "tokens" and request.method == "POST":
            return json_response({"token": self._issue_token(body)})
        if action == "client-certificates" and request.method == "POST":
            # {"user": U, "groups": [...], "lifetime": seconds}: for tests in other processes (this one's CA).
            lifetime = body.get("lifetime", 3600.0)
            if not body.get("user") or isinstance(lifetime, bool) or not isinstance(lifetime, int | float) \
                    or lifetime <= 0:
                raise ApiError(400, "BadRequest", 'give "user" (and "groups", a positive "lifetime" in seconds)')
            cert, key = self.client_certificate(str(body["user"]), tuple(body.get("groups") or ()), lifetime)
            return json_response({"certificate": cert.decode(), "key": key.decode()})
        if action == "requests":
            rows = [{"verb": v, "resource": r, "code": c, "count": n}
                    for (v, r, c), n in sorted(self.faults.requests.items())]
            return json_response({"requests": rows})
        if action == "audit":
            return json_response(self.audit.since(request.query.get("since", "0")))
        if action == "stats":
            return json_response({"resourceVersion": self.store.rv, "watchCacheResourceVersion": self.watch_cache_rv,
                                  "compactedResourceVersion": self.store.compacted_rv, "watchers": self.hub.count(),
                                  "objects": {f"{g}/{p}": len(b) for (g, p), b in self.store.buckets.items()}})
        raise ApiError(404, "NotFound", f"no admin endpoint {request.method} /_localcluster/{action}")
