"""How the Api's synchronous verbs meet admission webhooks, which are network calls to await.

Each write verb (create, update, patch, apply, delete) is a generator (`*_steps`): it runs as before and,
where kube-apiserver runs its webhook admission plugins, yields a `webhooks.Request` when a configuration's
rules take the request, and receives the object the mutating webhooks left. Nothing else changes:

- `Api.run` (the HTTP layer's path) drives a verb and awaits each yielded request (WebhookAdmission.dispatch).
  Around the await, the Api's per-request state (user, field manager, fieldValidation, warnings, options) is
  put aside, so the cluster's own writes made meanwhile (garbage collector, kubelet, controllers: no user,
  no admission) and other requests find it as they expect, and is put back before the verb goes on.
  A verb finding, after an await, that the object it started from is no longer the stored one starts over
  (GuaranteedUpdate's retry): its preconditions and the webhooks then meet the new state.
- The synchronous verbs (`Api.create`, ...) drive the same generator to its end at once: they are the
  cluster's own writes, which have no user and meet no webhook.

The order, as kube-apiserver's: decoding and defaulting, the field manager, the built-in mutating plugins
(pods), MutatingAdmissionWebhook, the kind's validation (errors found before a mutating webhook answer only
if it changes nothing: it may fix them), OwnerReferencesPermissionEnforcement, ValidatingAdmissionPolicy,
ValidatingAdmissionWebhook, then storage. When no webhook's rules take a request, the verb runs exactly
as it did before webhooks existed: one dict lookup decides it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from .. import errors
from ..errors import ApiError
from ..storage.resources import ResourceType
from ..storage.store import Store
from .webhooks import Candidates, Request, View, WebhookAdmission

RESTARTS = 5  # a write that keeps losing its race with others gives up with a Conflict
Steps = Generator[Request, Any, Any]


class _Restart(Exception):
    """The stored object changed while webhooks were called."""

    def __init__(self, request: Request) -> None:
        super().__init__(request.name)
        self.request = request


def drive(steps: Steps):
    """Run a verb's steps that meet no webhook (the cluster's own writes) to their result."""
    try:
        request = steps.send(None)
    except StopIteration as stop:
        return stop.value
    steps.close()
    raise errors.internal_error(f"admission webhooks met by a write without a user ({request.rt.plural})")


class WebhookSteps:
    """Mixed into Api: the verbs' webhook points and their driver."""

    user: Any
    admission: Any
    options: dict | None
    idle_manager: str  # the field manager between requests (the server's own)
    store: Store
    webhooks: WebhookAdmission
    manager: str
    field_validation: str
    warnings: list[str]

    if TYPE_CHECKING:  # the Api's own checks, which the webhook points run between the calls
        def _refuse(self, rt: ResourceType, obj: dict, causes: list) -> None: ...

        def _policies(self, rt: ResourceType, subresource: str | None, obj: dict, old: dict | None) -> None: ...

    async def run(self, make: Callable[[], Steps]):
        """Run `make()`'s verb, awaiting the webhooks it meets (the HTTP layer's path)."""
        for _ in range(RESTARTS):
            steps = make()
            try:
                return await self._drive(steps)
            except _Restart as restart:
                request = restart.request
        rt = request.rt
        raise errors.conflict(rt.qualified_resource, request.name, errors.STALE, rt.group, rt.plural)

    async def _drive(self, steps: Steps):
        value = None
        while True:
            try:
                request = steps.send(value)
            except StopIteration as stop:
                return stop.value
            state = self._request_state()
            self._set_request_state(None)
            try:
                value = await self.webhooks.dispatch(request)
            except BaseException as exc:
                steps.close()
                if isinstance(exc, ApiError):  # the refusal carries the warnings given so far, as Go's context
                    exc.warnings = [*state[3], *request.warnings]
                raise
            finally:
                self._set_request_state(state)
            self.warnings.extend(request.warnings)
            if self.store.get(request.storage_key, request.object_key) is not request.stored:
                steps.close()
                raise _Restart(request)

    def _request_state(self) -> tuple:
        return (self.user, self.manager, self.field_validation, self.warnings, self.options)

    def _set_request_state(self, state: tuple | None) -> None:
        if state is None:  # as between requests
            state = (None, self.idle_manager, "Ignore", [], None)
        self.user, self.manager, self.field_validation, self.warnings, self.options = state

    def _webhook_candidates(self, rt, subresource: str | None, operation: str) -> Candidates | None:
        """The webhooks whose rules take this request; None for the cluster's own writes and when none do."""
        if self.user is None:
            return None
        return self.webhooks.candidates(rt, subresource, operation, getattr(self.admission, "disabled", frozenset()))

    def _webhooks(self, found: Candidates, rt, subresource: str | None, operation: str, obj: dict | None,
                  old: dict | None, name: str, dry_run: bool, deferred: list,
                  readmit: Callable[[dict, dict], dict] | None,
                  view: View | None = None) -> Steps:
        """MutatingAdmissionWebhook, the validation errors held for it, the validating plugins, then
        ValidatingAdmissionWebhook; the object as admitted."""
        stored = old if operation != "CREATE" else None
        shown = obj if obj is not None else old
        if shown is None:
            raise errors.internal_error(f"admission webhooks met by a write without an object ({rt.plural})")
        meta = shown["metadata"]
        namespace = meta.get("namespace", "") if rt.namespaced else ""
        where = dict(rt=rt, subresource=subresource or "", operation=operation, old=old, name=name,
                     namespace=namespace, dry_run=dry_run, user=self.user, options=self.options,
                     authorize=self.admission.authorizer.authorize if self.admission is not None else None,
                     view=view, stored=stored, storage_key=rt.storage_key,
                     object_key=(namespace, meta.get("name", "")))
        if found.mutating:
            mutated = yield Request(True, found.mutating, obj=obj, **where)
            # a DELETE has no object to mutate (nor a readmit): what a webhook patched in it is dropped
            if mutated is not None and mutated != obj and obj is not None and readmit is not None:
                obj, deferred = readmit(mutated, obj), []
        if obj is not None:
            self._refuse(rt, obj, deferred)
            self._validating_admission(rt, subresource, obj, old)
        if found.validating:
            yield Request(False, found.validating, obj=obj, **where)
        return obj

    def _validating_admission(self, rt, subresource: str | None, obj: dict, old: dict | None) -> None:
        """OwnerReferencesPermissionEnforcement and ValidatingAdmissionPolicy, for requests with a user."""
        if self.user is not None and self.admission is not None:
            self.admission.validate(self.user, rt, subresource, obj, old)
            self._policies(rt, subresource, obj, old)
