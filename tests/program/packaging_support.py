"""What the packaging tests share: the overlays' renderings, the Helm chart's `helm template`."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import pytest

from localcluster.testing import ENV

from .manifests_support import NAME, NAMESPACE, ROOT, documents, render  # noqa: F401  (render: for the tests)

OVERLAYS = ROOT / "overlays"
CHART = ROOT / "charts" / "genericjob-controller"
BIN = Path(sys.executable).parent
HELM_LABELS = {"helm.sh/chart", "app.kubernetes.io/instance", "app.kubernetes.io/version",
               "app.kubernetes.io/managed-by"}
MONITORING_KINDS = {"ServiceMonitor", "PrometheusRule"}
WATCHED = ["team-a", "team-b"]  # overlays/namespaced's example list


def key(obj: dict) -> tuple[str, str, str | None]:
    return obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace")


def by_key(objects: list[dict]) -> dict[tuple[str, str, str | None], dict]:
    keyed = {key(o): o for o in objects}
    assert len(keyed) == len(objects), "two objects of the same kind, name and namespace"
    return keyed


def crd_stub(group: str, plural: str, kind: str) -> dict:
    """A CRD that serves a kind of another project (Prometheus Operator's) well enough for `kubectl apply`."""
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": f"{kind}List"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


PROMETHEUS_OPERATOR_CRDS = [crd_stub("monitoring.coreos.com", "servicemonitors", "ServiceMonitor"),
                            crd_stub("monitoring.coreos.com", "prometheusrules", "PrometheusRule")]



def helm_run(*args: str) -> subprocess.CompletedProcess:
    binary = BIN / "helm"
    if not binary.exists():
        pytest.fail(f"helm is not installed at {binary}; run `{sys.executable} scripts/install_kubectl.py "
                    f"--dest {BIN}` first")
    out = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=60,
                         env={**ENV, "HELM_CACHE_HOME": "/tmp/helm-cache", "HELM_CONFIG_HOME": "/tmp/helm-config",
                              "HELM_DATA_HOME": "/tmp/helm-data"})
    assert out.returncode == 0, f"helm {' '.join(args)} failed:\n{out.stderr}{out.stdout}"
    return out


def helm(*args: str) -> str:
    return helm_run(*args).stdout


@functools.lru_cache(maxsize=128)
def _templated(values: tuple[str, ...]) -> str:
    return helm("template", NAME, str(CHART), "--namespace", NAMESPACE, "--include-crds",
                *(arg for value in values for arg in ("--set", value)))


def template(*values: str) -> list[dict]:
    """`helm template` as the README installs it (release genericjob-controller in genericjob-system); the chart
    renders the same values the same way (no random or looked-up values), so each set is rendered once per
    process, and the caller gets its own objects."""
    return documents(_templated(values))


def without_helm_labels(obj: dict) -> dict:
    labels = {k: v for k, v in (obj["metadata"].get("labels") or {}).items() if k not in HELM_LABELS}
    metadata = {k: v for k, v in obj["metadata"].items() if k != "labels"}
    return {**obj, "metadata": {**metadata, **({"labels": labels} if labels else {})}}


def assert_same_objects(helm_objects: list[dict], kustomize_objects: list[dict]) -> None:
    for obj in helm_objects:
        if obj["kind"] != "CustomResourceDefinition":  # crds/ holds manifests/crds as they are
            assert HELM_LABELS <= (obj["metadata"].get("labels") or {}).keys(), f"no Helm labels on {key(obj)}"
    rendered = by_key([without_helm_labels(o) for o in helm_objects])
    expected = by_key(kustomize_objects)
    assert sorted(rendered, key=str) == sorted(expected, key=str), "different objects"
    for k, obj in expected.items():
        assert rendered[k] == obj, f"{k} differs:\nhelm:      {rendered[k]}\nkustomize: {obj}"
