"""Start-up checks: can this process reach the API server, is it allowed in, are the CRDs served?

    await preflight(rest_client, [(JOBS, None), (PODS, None), ...], lease=("ns", "name"), timeout=120)

Before the informers start, one small request per thing the controller will read: a `limit=1`
list of each watched resource in each watched namespace (the verbs the RBAC manifests grant, so
nothing extra is needed), and a GET of the Lease under leader election (a 404 is fine: the first
candidate creates it). Each failure becomes one message that says what to do:

- 401: the credentials were rejected; exit at once (retrying cannot help, as a Go controller knows).
- 403: the server's own message (it names the user, verb and resource) and where the RBAC is; at once.
- 404 on a custom resource: its CRD is not installed (or not served yet). Retried for a short
  while, each wait logged: a CRD applied together with the Deployment is served a few seconds
  after it is created. Then exit.
- no answer (a server that accepts connections and never responds), a refused connection:
  retried with backoff until the start-up deadline (--sync-timeout), each retry logged with the
  server and the per-request timeout, then a final message saying what was tried.
- any other answer (429, 5xx): the server is there and let us in; logged, and left to the
  informers, which retry with backoff (as they did before these checks existed).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import structlog

from informers import ApiStatusError, Resource
from informers.backoff import Backoff, BackoffPolicy
from kubeclient.rest import TRANSIENT_ERRORS, RestClient

log = structlog.get_logger("controller.runtime.preflight")

# Each start-up request gets at most this long, and at most a third of the whole start-up time,
# so that a server that never answers is retried (visibly) rather than waited on in silence.
REQUEST_TIMEOUT = 10.0
# How long a CRD may take to be served (it usually takes a second or two once created).
CRD_WAIT = 30.0
GRACE = 0.05  # less time than this left: no point in another attempt
RETRIES = BackoffPolicy(initial=0.5, cap=5.0, jitter=0.2)
INSTALL_CRDS = "kubectl apply -f manifests/crds/ (the Helm chart's crds/ directory holds the same files)"
RBAC_HINT = ("grant the controller's RBAC: manifests/rbac.yaml (ClusterRole genericjob-controller and its binding) "
             "and manifests/leader-election-rbac.yaml (the Lease), or for --namespace the Roles of "
             "overlays/namespaced/")
LEASES = Resource("coordination.k8s.io", "v1", "leases")


class PreflightError(Exception):
    """A start-up check failed in a way that retrying will not fix (or retrying ran out of time)."""


@dataclass(frozen=True)
class _Check:
    what: str  # for messages: "list genericjobs.batch.tensorstack.dev in all namespaces"
    path: str
    params: dict[str, str]
    resource: Resource
    missing_ok: bool = False  # a 404 means the object does not exist yet, which is fine


def checks(targets: Iterable[tuple[Resource, str | None]], lease: tuple[str, str] | None = None) -> list[_Check]:
    """One list per distinct (resource, namespace) the informers watch, then the Lease if there is one."""
    found: list[_Check] = []
    for resource, namespace in dict.fromkeys(targets):
        where = f"in namespace {namespace}" if namespace else "in all namespaces"
        found.append(_Check(f"list {resource} {where}", resource.path(namespace), {"limit": "1"}, resource))
    if lease is not None:
        namespace, name = lease
        found.append(_Check(f"get the Lease {namespace}/{name}", f"{LEASES.path(namespace)}/{name}", {}, LEASES,
                            missing_ok=True))
    return found


async def preflight(rest: RestClient, targets: Iterable[tuple[Resource, str | None]],
                    lease: tuple[str, str] | None = None, timeout: float = 120.0,
                    request_timeout: float = REQUEST_TIMEOUT, crd_wait: float = CRD_WAIT,
                    hint: Callable[[Resource], str] | None = None) -> None:
    """Run every check, retrying what may pass later within `timeout`; PreflightError says what to do. `hint`
    adds another way out to what a missing CRD's message says (the controller knows what can run without it)."""
    server = rest.server
    deadline = time.monotonic() + timeout
    per_request = max(min(request_timeout, round(timeout / 3, 1)), 0.1)
    for check in checks(targets, lease):
        await _run(rest, server, check, deadline, per_request, crd_wait, hint)
    log.info("start-up checks passed", server=server)


async def _run(rest: RestClient, server: str, check: _Check, deadline: float, per_request: float,
               crd_wait: float, hint: Callable[[Resource], str] | None = None) -> None:
    backoff = Backoff(RETRIES)
    missing_since: float | None = None
    attempts = 0
    while True:
        allowed = round(min(per_request, max(deadline - time.monotonic(), 0.1)), 1)  # never past the deadline
        attempts += 1
        try:
            await rest.get(check.path, check.params, timeout=allowed)
            return
        except ApiStatusError as err:
            if err.code == 404 and check.missing_ok:
                return
            if err.code == 401:
                raise PreflightError(
                    f"the API server {server} rejected the controller's credentials (401 {err.reason or 'Unauthorized'}"
                    f"): check the kubeconfig's user (its token or client certificate, or an expired token), or in "
                    f"a cluster the ServiceAccount token mounted into the pod") from err
            if err.code == 403:
                raise PreflightError(f"the API server {server} refused to {check.what} (403 Forbidden): "
                                     f"{err.message or err}. {RBAC_HINT}") from err
            if err.code == 404:
                now = time.monotonic()
                missing_since = now if missing_since is None else missing_since
                waited, limit = now - missing_since, min(crd_wait, deadline - missing_since)
                message = _missing(check.resource, server, hint)
                if waited >= limit - GRACE:
                    raise PreflightError(f"{message}; gave up after {waited:.0f} s") from err
                delay = min(backoff.next_delay(), limit - waited)
                log.warning(f"{message}; waiting for it to be served", retry_in=round(delay, 1),
                            gives_up_in=round(limit - waited, 1))
                await asyncio.sleep(delay)
                continue
            # Anything else (429, 5xx, ...) comes from a server that is there and let us in: whether the
            # request would work is then the informers' business, which retry it with backoff and name
            # the error if the caches do not sync in time.
            log.warning("start-up check inconclusive; the informers will retry", server=server, request=check.what,
                        error=str(err))
            return
        except TRANSIENT_ERRORS as err:
            if isinstance(err, TimeoutError):
                problem = f"no answer within {allowed:g} s"
            else:
                problem = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
        left = deadline - time.monotonic()
        if left <= GRACE:
            raise PreflightError(
                f"the API server {server} did not answer a request to {check.what} within --sync-timeout "
                f"({attempts} attempt(s), each allowed {per_request:g} s; last: {problem}): check that the "
                f"kubeconfig's server address is right and that the API server is up and reachable from here")
        delay = min(backoff.next_delay(), left)
        log.warning("API server not answering; retrying", server=server, request=check.what, error=problem,
                    request_timeout=allowed, retry_in=round(delay, 1), gives_up_in=round(left, 1))
        await asyncio.sleep(delay)


def _missing(resource: Resource, server: str, hint: Callable[[Resource], str] | None = None) -> str:
    if not resource.group or resource.group.endswith(".k8s.io"):  # a built-in API: no CRD to install
        return f"the API server {server} does not serve {resource.group or 'core'}/{resource.version} {resource.plural}"
    other_way = hint(resource) if hint else ""
    return (f"the CRD {resource.plural}.{resource.group} is not installed on {server} (no "
            f"{resource.group}/{resource.version} {resource.plural}): install it with {INSTALL_CRDS}"
            + (f", {other_way}" if other_way else ""))


__all__ = ["CRD_WAIT", "REQUEST_TIMEOUT", "PreflightError", "checks", "preflight"]
