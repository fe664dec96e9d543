"""Every job kind this build knows, and the controller that serves some of them: what `run` serves
(all, or those `--kinds` names) and `local` runs.

KINDS is the only list of the kinds, and it is made from the folders: each folder of controller/kinds/ with a
`kind.py` is a kind, the `JobKind` that module makes. What lists them outside the code (the CRDs kustomize and the
chart install, the RBAC rules, the user roles, the webhooks) is written from it by `make generate`, and a test fails
while any is stale. Adding a kind is its folder; a test may serve a kind of its own through `select(..., known=...)`,
or register it in KINDS for its length."""

from __future__ import annotations

import functools
import importlib
import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry

from controller.jobs.execution.controller import JobController
from controller.jobs.kind import JobKind, KindBase
from controller.jobs.schema import crd as generic
from controller.runtime.controller import ControllerConfig
from controller.runtime.group import ControllerGroup
from informers import InformerFactory, Resource
from kubeclient.rest import RestClient

if TYPE_CHECKING:
    from controller.jobs.testing import ModelContract

FIRST = "genericjob"  # the engine's own kind comes first: the lists outside the code are anchored on its entries


def discover(root: Path = Path(__file__).parent) -> dict[str, JobKind[Any]]:
    """Kind name -> the kind of each folder under `root` that has a `kind.py`: the one `KindBase` instance of a
    class that module defines. FIRST's folder first, then the others by name."""
    found: dict[str, JobKind[Any]] = {}
    for folder in sorted((path.name for path in root.iterdir() if (path / "kind.py").is_file()),
                         key=lambda name: (name != FIRST, name)):
        module = importlib.import_module(f"{__package__}.{folder}.kind")
        made = [value for value in vars(module).values()
                if isinstance(value, KindBase) and type(value).__module__ == module.__name__]
        if len(made) != 1:
            raise ImportError(f"{module.__name__} makes {len(made)} kinds (KindBase instances of its classes), not 1")
        found[made[0].api.kind] = made[0]
    return found


KINDS: dict[str, JobKind[Any]] = discover()


def crd_files(kinds: Sequence[JobKind] = ()) -> dict[str, str]:
    """File name -> YAML of every CRD the kinds (all by default) need (the PodGroup's included), generated from
    the models: the `manifests()` of each kind's `crd` module (controller/kinds/<kind>/crd.py), else (a kind
    without one) its `crd()` in `<kind>.yaml`."""
    files: dict[str, str] = {}
    for kind in kinds or KINDS.values():
        module = f"{_package(kind)}.crd"
        if importlib.util.find_spec(module) is not None:
            files.update(importlib.import_module(module).manifests())
        else:
            files[f"{kind.api.kind.lower()}.yaml"] = generic.render("", kind.crd())
    return files


def local_crds() -> dict[str, dict]:
    """File name -> a minimal CRD of each dependent API the kinds use that is another's (the platform's
    TensorBoard): for `local` and the tests, never in the default install."""
    return {f"{dependent.resource.plural}.yaml": dependent.local_crd()
            for kind in KINDS.values() for dependent in kind.dependent_resources if dependent.local_crd is not None}


def model_contract(kind: JobKind) -> ModelContract:
    """The kind's model contract: its rules written out from the spec for the engine's model test
    (controller/jobs/testing.py), the `MODEL` of its folder's `testing` module (controller/kinds/<kind>/testing.py),
    or the kind's own `model_contract` (a kind a test defines). Only the tests ask."""
    own = getattr(kind, "model_contract", None)
    return own if own is not None else importlib.import_module(f"{_package(kind)}.testing").MODEL


def _package(kind: JobKind) -> str:
    return type(kind).__module__.rpartition(".")[0]


def select(names: Sequence[str] = (), known: Mapping[str, JobKind] = KINDS) -> list[JobKind]:
    """The kinds named (by kind or plural, any case) of those `known` (the registry's by default); every one
    when none is named."""
    if not names:
        return list(known.values())
    keys = {key.lower(): kind for kind in known.values() for key in (kind.api.kind, kind.api.plural)}
    unknown = [name for name in names if name.lower() not in keys]
    if unknown:
        raise ValueError(f"unknown job kind {', '.join(unknown)} (known: {', '.join(known)})")
    return list({id(keys[name.lower()]): keys[name.lower()] for name in names}.values())


def make_controller(rest: RestClient, config: ControllerConfig, registry: CollectorRegistry,
                    kinds: Sequence[JobKind] = ()) -> JobController | ControllerGroup:
    """ManagerConfig.make_controller: one JobController per kind served (every registered kind by
    default), sharing one informer factory when there are several."""
    kinds = list(kinds) or list(KINDS.values())
    if len(kinds) == 1:
        return JobController(kinds[0], rest, config, registry)
    factory = InformerFactory(rest, options=config.informer_options, registry=registry)
    return ControllerGroup([JobController(kind, rest, config, registry, factory=factory) for kind in kinds],
                           missing_api_hint=functools.partial(without_kind, kinds))


def without_kind(kinds: Sequence[JobKind], resource: Resource) -> str:
    """The other way out when the CRD of one kind served is missing: serve the others (`--kinds`)."""
    others = [kind.api.kind for kind in kinds if kind.api.resource != resource]
    if len(others) == len(kinds) or not others:
        return ""
    return f"or serve only the other kinds: --kinds {','.join(others)}"
