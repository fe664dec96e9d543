"""The minimum Kubernetes version the README states holds for everything the project uses: the CRDs'
rule fields and CEL functions (localcluster.crd's RULE_FIELDS and FUNCTIONS: in which version a new CRD may first use
each), the rules' cost on that version's estimator, the API group versions and request parameters the
controller calls, and the API versions of what the install applies.

A use newer than the stated minimum fails the test; so does a built-in API this file's table does not
know (add it, with the version that first served it).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from controller.jobs.schema.crd import MANIFEST_DIR
from localcluster import crd as crd_tools
from localcluster.crd import K8S_1_28, Checker, decl_type, parse

from .manifests_support import load_file

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = ("apimachinery", "kubeclient", "informers", "workqueue", "controller")  # what `run` imports (not devtools)

# group/version (or group/version/Kind where a kind came later than its group) -> the first Kubernetes
# version serving it as GA.
API_VERSIONS = {
    "v1": (1, 0), "apps/v1": (1, 9), "batch/v1": (1, 2), "batch/v1/CronJob": (1, 21),
    "rbac.authorization.k8s.io/v1": (1, 8), "apiextensions.k8s.io/v1": (1, 16),
    "coordination.k8s.io/v1": (1, 14), "events.k8s.io/v1": (1, 19), "policy/v1": (1, 21),
    "networking.k8s.io/v1": (1, 7), "networking.k8s.io/v1/Ingress": (1, 19),
    "authentication.k8s.io/v1": (1, 6), "authorization.k8s.io/v1": (1, 6), "scheduling.k8s.io/v1": (1, 14),
    "admissionregistration.k8s.io/v1": (1, 16), "autoscaling/v2": (1, 23),
}
# Request parameters -> the version that made them GA (or on by default).
PARAMETERS = {"allowWatchBookmarks": (1, 17), "resourceVersionMatch": (1, 19), "fieldValidation": (1, 27),
              "sendInitialEvents": (1, 32), "fieldManager": (1, 18)}
# Fields of built-in kinds the install sets -> the version serving them by default.
FIELDS = {"unhealthyPodEvictionPolicy": (1, 27), "selectableFields": (1, 31), "trafficDistribution": (1, 31)}
OWN_GROUPS = {"batch.tensorstack.dev", "scheduler.tensorstack.dev"}  # the install's own CRDs
NOT_SERVED = {"kustomize.config.k8s.io"}  # kustomize's own files, never sent to a server


def stated_minimum() -> tuple[int, int]:
    found = re.search(r"Needs \*\*Kubernetes (\d+)\.(\d+) or later\*\*", (ROOT / "README.md").read_text())
    assert found, "README.md no longer states the minimum Kubernetes version"
    return int(found.group(1)), int(found.group(2))


def built_in(group_version: str) -> bool:
    group = group_version.rpartition("/")[0] if "/" in group_version else ""
    return "." not in group or (group.endswith(".k8s.io") and group not in NOT_SERVED)


def first_served(group_version: str, kind: str = "") -> tuple[int, int]:
    version = API_VERSIONS.get(f"{group_version}/{kind}") or API_VERSIONS.get(group_version)
    assert version is not None, f"{group_version} {kind}: not in API_VERSIONS; add the version that first served it"
    return version


def crds() -> dict[str, dict]:
    found = {}
    for name in ("genericjob.yaml", "tensorflowtrainingjob.yaml", "podgroup.yaml"):
        [found[name]] = load_file(MANIFEST_DIR / name)  # parsed once (libyaml): the CRDs are large
    return found


def _schemas_with_rules(node: dict, root: bool = True):
    if node.get("x-kubernetes-validations"):
        yield node, root
    for child in (node.get("properties") or {}).values():
        yield from _schemas_with_rules(child, False)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            yield from _schemas_with_rules(node[key], False)


def scanned_once(scan: Callable[[], dict[str, tuple[int, int]]]) -> Callable[[], dict[str, tuple[int, int]]]:
    """A scan of files no test changes (three tests ask for each), made once per process; each caller gets its
    own dict."""
    cached = functools.cache(scan)

    @functools.wraps(scan)
    def fresh() -> dict[str, tuple[int, int]]:
        return dict(cached())

    return fresh


@scanned_once
def crd_needs() -> dict[str, tuple[int, int]]:
    """What the CRDs use -> the version it needs."""
    needs = {"apiextensions.k8s.io/v1": API_VERSIONS["apiextensions.k8s.io/v1"]}
    for name, crd in crds().items():
        for version in crd["spec"]["versions"]:
            for schema, root in _schemas_with_rules(version["schema"]["openAPIV3Schema"]):
                self_type = decl_type(schema, root)
                for rule in schema["x-kubernetes-validations"]:
                    for key in rule:
                        needs[f"{name}: rule field {key}"] = crd_tools.RULE_FIELDS[key]
                    checker = Checker({"self": self_type, "oldSelf": self_type})
                    checker.check(parse(rule["rule"]))
                    for function in checker.functions:
                        needs[f"{name}: CEL {function}()"] = crd_tools.FUNCTIONS[function]
    return needs


def _production_sources() -> list[Path]:
    return [path for package in PRODUCTION for path in (ROOT / package).rglob("*.py")
            if "devtools" not in path.parts]


@scanned_once
def controller_needs() -> dict[str, tuple[int, int]]:
    """The API group versions and request parameters in the production code's string literals: paths
    (/api/v1, /apis/GROUP/VERSION), apiVersion values and Resource(GROUP, VERSION, ...) constructions."""
    needs: dict[str, tuple[int, int]] = {}
    for path in _production_sources():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for found in re.finditer(r"/apis/([a-z0-9.-]+)/(v[0-9a-z]+)\b|/api/(v1)\b", node.value):
                    group_version = found.group(3) or f"{found.group(1)}/{found.group(2)}"
                    if built_in(group_version):
                        needs[f"{path.relative_to(ROOT)}: {group_version}"] = first_served(group_version)
                if node.value in PARAMETERS:
                    needs[f"{path.relative_to(ROOT)}: ?{node.value}"] = PARAMETERS[node.value]
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if isinstance(key, ast.Constant) and key.value == "apiVersion" and \
                            isinstance(value, ast.Constant) and built_in(value.value):
                        needs[f"{path.relative_to(ROOT)}: {value.value}"] = first_served(value.value)
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Resource" and len(node.args) >= 2 \
                    and all(isinstance(a, ast.Constant) for a in node.args[:2]):
                group, version = node.args[0].value, node.args[1].value
                group_version = f"{group}/{version}" if group else version
                if built_in(group_version):
                    needs[f"{path.relative_to(ROOT)}: {group_version}"] = first_served(group_version)
    return needs


@scanned_once
def install_needs() -> dict[str, tuple[int, int]]:
    """The built-in kinds the manifests, overlays and the chart's templates apply."""
    needs: dict[str, tuple[int, int]] = {}
    files = [*(ROOT / "manifests").rglob("*.yaml"), *(ROOT / "overlays").rglob("*.yaml"),
             *(ROOT / "charts").rglob("*.yaml")]
    for path in files:
        for found in re.finditer(r"^apiVersion:\s*(\S+)\s*\n(?:.*\n)*?kind:\s*(\w+)", path.read_text(), re.M):
            group_version, kind = found.group(1).strip("\"'"), found.group(2)
            if built_in(group_version) and "{{" not in group_version:
                needs[f"{path.relative_to(ROOT)}: {group_version} {kind}"] = first_served(group_version, kind)
        for name, version in FIELDS.items():
            if re.search(rf"^\s*{name}:", path.read_text(), re.M):
                needs[f"{path.relative_to(ROOT)}: {name}"] = version
    return needs


def test_localcluster_stands_for_the_stated_minimum():
    assert crd_tools.MINIMUM_VERSION == stated_minimum()


@pytest.mark.parametrize("needs", [crd_needs, controller_needs, install_needs])
def test_nothing_needs_a_newer_kubernetes_than_the_stated_minimum(needs):
    found = needs()
    assert found, "nothing found: the scan is broken"
    minimum = stated_minimum()
    newer = {what: version for what, version in found.items() if version > minimum}
    assert not newer, f"newer than Kubernetes {minimum[0]}.{minimum[1]}: {newer}"


def test_what_sets_the_minimum_is_a_rule_field():
    """1.28 is fieldPath's version: the test would notice if the minimum could be lowered."""
    needs = {**crd_needs(), **controller_needs(), **install_needs()}
    assert max(needs.values()) == stated_minimum()
    assert any(what.endswith("rule field fieldPath") for what, v in needs.items() if v == stated_minimum())


def test_the_crds_fit_the_minimum_versions_cost_budget():
    for name, crd in crds().items():
        assert crd_tools.errors(crd, K8S_1_28, stated_minimum()) == [], name


def test_the_scan_sees_the_controllers_api_calls():
    """The Lease (leader election), the reviews (metrics auth), core v1 (pods, Services, Events) and
    watch bookmarks are found: the scan does look where the calls are."""
    found = " ".join(controller_needs())
    for expected in ("coordination.k8s.io/v1", "authentication.k8s.io/v1", "authorization.k8s.io/v1", ": v1",
                     "?allowWatchBookmarks"):
        assert expected in found, expected
