"""MutatingAdmissionWebhook and ValidatingAdmissionWebhook: the configurations' webhooks called on writes, as
kube-apiserver's plugins do (k8s.io/apiserver pkg/admission/plugin/webhook: generic, mutating, validating,
predicates).

Which webhooks a request meets:
- rules (predicates/rules): operations, apiGroups, apiVersions, resources with their subresources
  (`pods/status`, `*/scale`, `*/*`), scope (`Namespaced`: a namespaced resource; `Cluster`: a
  cluster-scoped one, Namespaces included). With matchPolicy Equivalent, a request to another served
  version of the same resource (a CRD's versions) matches too, and the webhook gets the object in the
  version its rule names.
- namespaceSelector on the labels of the request's namespace (a Namespace's own on its create and update;
  a cluster-scoped object always matches), objectSelector on the new or the old object's labels,
  matchConditions (CEL: object, oldObject, request, authorizer; an error fails under failurePolicy Fail,
  is no match under Ignore).
- never on the admission configurations themselves (webhook configurations, ValidatingAdmissionPolicies
  and their bindings), so a broken webhook cannot lock them.

The candidates by rules are kept per (resource, subresource, operation), recomputed only when a
configuration or a CRD changes: a write that no webhook could concern costs one dict lookup, and none at
all while there is no configuration. Mutating webhooks are called one after the other in the order of
their configurations' names; a patch (JSONPatch) changes the object the next one sees; a webhook with
reinvocationPolicy IfNeeded is called once more if a later one changed the object. Validating webhooks
are called at once; the first refusal in their order is the answer. Every call is bounded by its
timeoutSeconds (webhook_calls.py).

The answers, as the API server words them: a refusal is the webhook's Status with its message after
`admission webhook "NAME" denied the request: ` and its code (400 if it gives none below 400, as
ToStatusErr does), reason and causes; a call that fails is `Internal error occurred: failed calling
webhook "NAME": ...` (500) under Fail and ignored under Ignore; a dry run meeting a webhook whose
sideEffects are not None/NoneOnDryRun is a 400 `admission webhook "NAME" does not support dry run`;
warnings become Warning headers.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from apimachinery.selectors import SelectorError

from .. import errors
from ..errors import ApiError
from ..storage.resources import ResourceType
from ..validation import label_selector_from_dict
from . import webhook_calls
from .webhook_configs import GROUP, MUTATING, VALIDATING
from .webhook_configs import NO_SIDE_EFFECTS as SAFE_FOR_DRY_RUN

log = logging.getLogger("localcluster.webhooks")
MUTATING_PLUGIN, VALIDATING_PLUGIN = "MutatingAdmissionWebhook", "ValidatingAdmissionWebhook"
PLUGINS = (MUTATING_PLUGIN, VALIDATING_PLUGIN)
CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
WATCHED = frozenset({MUTATING, VALIDATING, CRDS})
EXEMPT_KINDS = frozenset({"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
                          "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
                          "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"})
NAMESPACES = ("", "namespaces")


@dataclass(frozen=True, slots=True, eq=False)
class Hook:
    configuration: str
    mutating: bool
    spec: dict

    @property
    def name(self) -> str:
        return self.spec.get("name", "")

    @property
    def ignores_failures(self) -> bool:
        return self.spec.get("failurePolicy") == "Ignore"


@dataclass(frozen=True, slots=True, eq=False)
class Invocation:
    hook: Hook
    rt: ResourceType  # the version the webhook is called in (another one than the request's: matchPolicy)


@dataclass(frozen=True, slots=True, eq=False)
class Candidates:
    """The webhooks whose rules take a kind of request."""

    mutating: tuple[Invocation, ...]
    validating: tuple[Invocation, ...]


@dataclass(slots=True)
class View:
    """How a subresource's requests show the object to webhooks (the scale subresource: as a Scale)."""

    group: str
    version: str
    kind: str
    show: Callable[[dict], dict]
    take: Callable[[dict, dict], dict]  # (object, the view a webhook changed) -> the object changed alike


@dataclass(slots=True)
class Request:
    """One admission of one write, as the Api's verbs yield it to be awaited (Api.run)."""

    mutating: bool
    invocations: tuple[Invocation, ...]
    rt: ResourceType
    subresource: str
    operation: str
    obj: dict | None
    old: dict | None
    name: str
    namespace: str
    dry_run: bool
    user: object
    options: dict | None
    authorize: Callable | None
    view: View | None = None
    # The stored object the write started from (None: there was none): a write that finds another one
    # after the calls starts again, as the registry's GuaranteedUpdate retries on a conflict.
    stored: dict | None = None
    storage_key: tuple[str, str] = ("", "")
    object_key: tuple[str, str] = ("", "")
    warnings: list[str] = field(default_factory=list)


def rule_matches(rule: dict, rt: ResourceType, subresource: str, operation: str) -> bool:
    """predicates/rules Matcher.Matches."""
    scope = rule.get("scope") or "*"
    if scope == "Namespaced" and (not rt.namespaced or rt.storage_key == NAMESPACES):
        return False
    if scope == "Cluster" and rt.namespaced:
        return False
    if scope not in ("*", "Namespaced", "Cluster"):
        return False
    operations = rule.get("operations") or ()
    if "*" not in operations and operation not in operations:
        return False
    groups, versions = rule.get("apiGroups") or (), rule.get("apiVersions") or ()
    if ("*" not in groups and rt.group not in groups) or ("*" not in versions and rt.version not in versions):
        return False
    for entry in rule.get("resources") or ():
        res, _, sub = entry.partition("/")
        if (res == "*" or res == rt.plural) and (sub == "*" or sub == subresource):
            return True
    return False


def _selects(selector: dict | None, labels: dict | None) -> bool:
    return label_selector_from_dict(selector or {}).matches(labels or {})


class WebhookAdmission:
    """The two plugins of one cluster: the configurations' index, the matching and the calls."""

    def __init__(self, store, registry, present: Callable[[ResourceType, dict], dict]) -> None:
        self.store = store
        self.registry = registry
        self.present = present
        self.client = webhook_calls.WebhookClient(store)
        self._hooks: tuple[Hook, ...] | None = None
        self._candidates: dict[tuple, Candidates | None] = {}
        store.subscribe(self._on_event)

    def _on_event(self, ev) -> None:
        if ev.key in WATCHED:
            self._hooks = None
            self._candidates.clear()

    def _all(self) -> tuple[Hook, ...]:
        if self._hooks is None:
            hooks = []
            for key, mutating in ((MUTATING, True), (VALIDATING, False)):
                for config in sorted(self.store.objects(key), key=lambda c: c["metadata"]["name"]):
                    hooks += [Hook(config["metadata"]["name"], mutating, spec)
                              for spec in config.get("webhooks") or () if isinstance(spec, dict)]
            self._hooks = tuple(hooks)
        return self._hooks

    def candidates(self, rt: ResourceType, subresource: str | None, operation: str,
                   disabled: frozenset = frozenset()) -> Candidates | None:
        """The webhooks whose rules take this kind of request; None (at once) when none can."""
        if not self._all():
            return None
        key = (rt, subresource or "", operation, disabled)
        try:
            return self._candidates[key]
        except KeyError:
            found = self._candidates[key] = self._by_rules(rt, subresource or "", operation, disabled)
            return found

    def _by_rules(self, rt: ResourceType, subresource: str, operation: str, disabled: frozenset) -> Candidates | None:
        if rt.group == GROUP and rt.kind in EXEMPT_KINDS:
            return None
        equivalents = [other for other in self.registry.all()
                       if (other.group, other.plural) == (rt.group, rt.plural) and other is not rt]
        mutating: list[Invocation] = []
        validating: list[Invocation] = []
        for hook in self._all():
            if (MUTATING_PLUGIN if hook.mutating else VALIDATING_PLUGIN) in disabled:
                continue
            rules = [r for r in hook.spec.get("rules") or () if isinstance(r, dict)]
            chosen = rt if any(rule_matches(r, rt, subresource, operation) for r in rules) else None
            if chosen is None and hook.spec.get("matchPolicy", "Equivalent") == "Equivalent":
                chosen = next((other for other in equivalents
                               if any(rule_matches(r, other, subresource, operation) for r in rules)), None)
            if chosen is not None:
                (mutating if hook.mutating else validating).append(Invocation(hook, chosen))
        if not mutating and not validating:
            return None
        return Candidates(tuple(mutating), tuple(validating))

    # --- per request ---------------------------------------------------------------------------

    def _should_call(self, invocation: Invocation, request: Request, obj: dict | None) -> bool:
        """ShouldCallHook past the rules: the selectors, then the match conditions; raises their errors."""
        spec = invocation.hook.spec
        try:
            if not self._namespace_matches(spec.get("namespaceSelector"), request, obj):
                return False
            selector = spec.get("objectSelector")
            if selector and not any(o is not None and _selects(selector, (o.get("metadata") or {}).get("labels"))
                                    for o in self._shown(request, obj, request.old)):
                return False
        except SelectorError as exc:
            raise errors.internal_error(str(exc)) from exc
        conditions = spec.get("matchConditions") or []
        return not conditions or self._conditions_hold(invocation, request, obj, conditions)

    def _namespace_matches(self, selector: dict | None, request: Request, obj: dict | None) -> bool:
        is_namespace = request.rt.storage_key == NAMESPACES
        if not request.namespace and not is_namespace:
            return True
        if not selector:
            return True
        if is_namespace and not request.subresource and request.operation in ("CREATE", "UPDATE"):
            labels = ((obj or {}).get("metadata") or {}).get("labels")
        else:
            namespace = self.store.get(NAMESPACES, ("", request.namespace or request.name))
            if namespace is None:
                raise errors.not_found("namespaces", request.namespace or request.name, "", "namespaces")
            labels = namespace["metadata"].get("labels")
        return _selects(selector, labels)

    def _conditions_hold(self, invocation: Invocation, request: Request, obj: dict | None, conditions: list) -> bool:
        from . import webhook_conditions

        failure = webhook_conditions.evaluate(conditions, self._shown(request, obj, request.old),
                                              self._request_body(invocation, request, ""), request)
        if failure is None:
            return True
        if failure == "" or invocation.hook.ignores_failures:
            return False
        from ..auth.rbac import forbidden

        raise forbidden(request.rt.group, request.rt.plural, request.name, failure)

    def _shown(self, request: Request, obj: dict | None, old: dict | None) -> tuple[dict | None, dict | None]:
        if request.view is None:
            return obj, old
        return (request.view.show(obj) if obj is not None else None,
                request.view.show(old) if old is not None else None)

    def _request_body(self, invocation: Invocation, request: Request, uid: str) -> dict:
        rt, called = request.rt, invocation.rt
        if request.view is not None:
            kind = {"group": request.view.group, "version": request.view.version, "kind": request.view.kind}
            request_kind = kind
        else:
            kind = {"group": called.group, "version": called.version, "kind": called.kind}
            request_kind = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        user = request.user
        user_info: dict = {"username": getattr(user, "name", "")}
        if uid_of_user := getattr(user, "uid", ""):
            user_info["uid"] = uid_of_user
        if groups := getattr(user, "groups", ()):
            user_info["groups"] = list(groups)
        body: dict = {"uid": uid, "kind": kind,
                      "resource": {"group": called.group, "version": called.version, "resource": called.plural}}
        if request.subresource:
            body["subResource"] = request.subresource
        body["requestKind"] = request_kind
        body["requestResource"] = {"group": rt.group, "version": rt.version, "resource": rt.plural}
        if request.subresource:
            body["requestSubResource"] = request.subresource
        if request.name:
            body["name"] = request.name
        if request.namespace:
            body["namespace"] = request.namespace
        body["operation"] = request.operation
        body["userInfo"] = user_info
        return body

    # --- the calls ----------------------------------------------------------------------------

    async def dispatch(self, request: Request) -> dict | None:
        """Run the request's webhooks; the object as the mutating ones left it (the same object if unchanged)."""
        if request.mutating:
            return await self._mutate(request)
        chosen = [inv for inv in request.invocations if self._should_call(inv, request, request.obj)]
        if chosen:
            outcomes = await asyncio.gather(*(self._call(inv, request, request.obj) for inv in chosen),
                                            return_exceptions=True)
            for outcome in outcomes:
                if isinstance(outcome, BaseException):
                    raise outcome
        return request.obj

    async def _mutate(self, request: Request) -> dict | None:
        obj = request.obj
        changed_at = -1
        reinvocable: list[tuple[int, Invocation]] = []
        for index, invocation in enumerate(request.invocations):
            if not self._should_call(invocation, request, obj):
                continue
            result = await self._call(invocation, request, obj)
            if invocation.hook.spec.get("reinvocationPolicy") == "IfNeeded":
                reinvocable.append((index, invocation))
            if result is not None and result != obj:
                obj, changed_at = result, index
        for index, invocation in reinvocable:  # once more, those a later webhook's change has not been seen by
            if index < changed_at and self._should_call(invocation, request, obj):
                result = await self._call(invocation, request, obj)
                if result is not None:
                    obj = result
        return obj

    async def _call(self, invocation: Invocation, request: Request, obj: dict | None) -> dict | None:
        """One webhook: its patched object (mutating), or None; raises the request's error."""
        hook = invocation.hook
        try:
            return await self._call_hook(invocation, request, obj)
        except webhook_calls.CallFailure as failure:
            text = f'failed calling webhook "{hook.name}": {failure}'
            if hook.ignores_failures:
                log.warning("Failed calling webhook, failing open %s: %s", hook.name, text)
                return None
            log.warning("Failed calling webhook, failing closed %s: %s", hook.name, text)
            raise errors.internal_error(text) from None

    async def _call_hook(self, invocation: Invocation, request: Request, obj: dict | None) -> dict | None:
        hook, spec = invocation.hook, invocation.hook.spec
        if request.dry_run:
            if spec.get("sideEffects") is None:
                raise webhook_calls.CallFailure("Webhook SideEffects is nil")
            if spec["sideEffects"] not in SAFE_FOR_DRY_RUN:
                raise errors.bad_request(f'admission webhook "{hook.name}" does not support dry run')
        version = webhook_calls.review_version(spec.get("admissionReviewVersions") or [])
        if version is None:
            raise webhook_calls.CallFailure("could not create admission objects: webhook does not accept known "
                                            "AdmissionReview versions (v1, v1beta1)")
        uid = str(uuid.uuid4())
        shown, shown_old = self._shown(request, obj, request.old)
        if request.view is None:
            shown = self.present(invocation.rt, shown) if shown is not None else None
            shown_old = self.present(invocation.rt, shown_old) if shown_old is not None else None
        body = self._request_body(invocation, request, uid)
        body.update({"object": shown, "oldObject": shown_old, "dryRun": request.dry_run, "options": request.options})
        review = {"kind": "AdmissionReview", "apiVersion": f"{webhook_calls.REVIEW_GROUP}/{version}", "request": body}
        response = await self.client.post(spec.get("clientConfig") or {}, review, int(spec.get("timeoutSeconds", 10)))
        result = webhook_calls.verify(response, uid, version, hook.mutating)
        request.warnings.extend(str(w) for w in result.get("warnings") or ())
        if not result.get("allowed"):
            raise denial(hook.name, result.get("status"))
        if not hook.mutating:
            return None
        patch = webhook_calls.decode_patch(result)
        if not patch:
            return None
        if shown is None or obj is None:  # the one is shown of the other
            raise errors.internal_error(f'admission webhook "{hook.name}" attempted to modify the object, which is '
                                        f"not supported for this operation")
        from ..fields.patch import PatchError, json_patch

        try:
            patched = json_patch(shown, patch)
        except PatchError as exc:
            raise errors.internal_error(str(exc)) from None
        if request.view is not None:
            return request.view.take(obj, patched)
        return self.present(request.rt, patched)


def denial(name: str, status: dict | None) -> ApiError:
    """webhookerrors.ToStatusErr: the webhook's Status, its message prefixed, a code of at least 400."""
    status = dict(status) if isinstance(status, dict) else {}
    code = status["code"] if isinstance(status.get("code"), int) else 0
    denied = f'admission webhook "{name}" denied the request'
    if status.get("message"):
        message = f"{denied}: {status['message']}"
    elif status.get("reason"):
        message = f"{denied}: {status['reason']}"
    else:
        message = f"{denied} without explanation"
    details = status.get("details") if isinstance(status.get("details"), dict) else None
    return ApiError(max(code, 400), str(status.get("reason") or ""), message, details)
