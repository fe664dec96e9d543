"""The Helm chart: it lints, `helm template` renders the same objects as `kubectl kustomize` for each variant
(modulo Helm's standard labels), its values change what they say, and the packages' descriptions name every kind."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest
import yaml

from controller.kinds import registry

from .manifests_support import MANIFESTS, NAME, NAMESPACE, ROOT, find
from .packaging_support import BIN, CHART, WATCHED, assert_same_objects, helm, helm_run, template

# --- the Helm chart ------------------------------------------------------------------------------



@pytest.mark.slow  # scripts/sync_chart_files.py
def test_chart_shares_crds_rbac_dashboard_and_alerts_with_manifests():
    """Copies kept in sync with manifests/ by scripts/sync_chart_files.py (a test fails while one differs), not
    symbolic links: Helm warns `found symbolic link in path` for each link on every command. (Issue 24 changed
    this test from links to copies.)"""
    monitoring = MANIFESTS / "components" / "monitoring"
    crds = [(CHART / "crds" / name, MANIFESTS / "crds" / name) for name in registry.crd_files()]  # every kind's
    for copy, source in (*crds,
                         (CHART / "files" / "dashboard.json", monitoring / "dashboard.json"),
                         (CHART / "files" / "prometheusrule.yaml", monitoring / "prometheusrule.yaml"),
                         (CHART / "files" / "rbac.yaml", MANIFESTS / "rbac.yaml"),
                         (CHART / "files" / "user-rbac.yaml", MANIFESTS / "user-rbac.yaml")):
        assert not copy.is_symlink(), copy
        assert copy.read_bytes() == source.read_bytes(), f"{copy} is stale: run python scripts/sync_chart_files.py"
    assert sorted(p.name for p in (CHART / "crds").iterdir()) == sorted(p.name for p in (MANIFESTS / "crds").iterdir())
    check = subprocess.run([sys.executable, str(ROOT / "scripts" / "sync_chart_files.py"), "--check"],
                           capture_output=True, text=True, timeout=30, check=False)
    assert (check.returncode, check.stdout) == (0, ""), check.stdout
    assert not [p for p in CHART.rglob("*") if p.is_symlink()]


@pytest.mark.slow  # helm
def test_helm_is_quiet_and_its_package_carries_the_crds_and_renders(tmp_path):
    """`helm lint`, `template` and `package` print no warning (no `found symbolic link in path`), and the packaged
    chart, as a user installs it from a registry, holds every CRD and renders as the chart directory does."""
    for args in (("lint", str(CHART)), ("template", NAME, str(CHART)), ("package", str(CHART), "-d", str(tmp_path))):
        done = helm_run(*args)
        assert "symbolic link" not in done.stderr and "WARNING" not in done.stderr.upper(), (args, done.stderr)
    [package] = tmp_path.glob("genericjob-controller-*.tgz")
    with tarfile.open(package) as archive:
        names = archive.getnames()
        crds = {Path(n).name: archive.extractfile(n).read() for n in names if "/crds/" in n}
    assert crds == {p.name: p.read_bytes() for p in (MANIFESTS / "crds").iterdir()}
    assert "genericjob-controller/templates/deployment.yaml" in names
    from_package = helm("template", NAME, str(package), "--namespace", NAMESPACE, "--include-crds")
    from_directory = helm("template", NAME, str(CHART), "--namespace", NAMESPACE, "--include-crds")
    assert from_package == from_directory
    assert "kind: CustomResourceDefinition" in from_package and "kind: Deployment" in from_package


@pytest.mark.slow  # helm
@pytest.mark.parametrize("values", [(), ("namespaces={team-a,team-b}", "metrics.serviceMonitor.enabled=true",
                                         "metrics.prometheusRule.enabled=true", "metrics.grafanaDashboard.enabled=true",
                                         "metrics.secure=false", "replicas=1", "leaderElection.enabled=false",
                                         "namespace.create=true")])
def test_helm_lint(values):
    out = helm("lint", "--strict", str(CHART), *(arg for value in values for arg in ("--set", value)))
    assert "0 chart(s) failed" in out, out


def test_helm_default_values_render_the_kustomize_install(base):
    # Helm installs into a namespace it is given (`--create-namespace`): the Namespace object is opt-in.
    assert_same_objects(template(), [o for o in base if o["kind"] != "Namespace"])
    assert_same_objects(template("namespace.create=true"), base)


def test_helm_monitoring_values_render_the_monitoring_overlay(monitoring):
    assert_same_objects(template("metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true",
                                 "metrics.grafanaDashboard.enabled=true", "namespace.create=true"), monitoring)


def test_helm_namespaces_render_the_namespaced_overlay(namespaced):
    assert_same_objects(template(f"namespaces={{{','.join(WATCHED)}}}", "namespace.create=true"), namespaced)


@pytest.mark.slow  # helm
def test_helm_values_change_what_they_say():
    objects = template("replicas=1", "leaderElection.enabled=false", "metrics.secure=false",
                       "metrics.serviceMonitor.enabled=true", "image.tag=1.2.3", "extraArgs={--workers=8}")
    [container] = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "ghcr.io/t9k/genericjob-controller:1.2.3"
    assert container["args"] == ["run", "--no-leader-elect", "--log-format", "json", "--metrics-address=:8443",
                                 "--webhook-port=9443", "--no-metrics-secure", "--workers=8"]
    assert find(objects, "Deployment")["spec"]["replicas"] == 1
    kinds = {o["kind"] for o in objects}
    assert "PodDisruptionBudget" not in kinds  # minAvailable 1 of 1 would block every drain
    assert not [o for o in objects if o["kind"] == "Role" and "lease" in json.dumps(o)]  # no Lease without election
    [port] = find(objects, "Service", f"{NAME}-metrics")["spec"]["ports"]
    assert port["name"] == "http" == container["ports"][0]["name"]
    [endpoint] = find(objects, "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint == {"port": "http", "scheme": "http", "path": "/metrics", "interval": "30s"}


@pytest.mark.slow  # helm
@pytest.mark.parametrize(("value", "message"), [
    ("leaderElection.enabled=false", "leaderElection.enabled"),  # two replicas would both reconcile
    ("namespaces=team-a", "namespaces"),  # a string, not a list (values.schema.json)
    ("namespaces={Team_A}", "namespaces"),  # not a namespace name
    ("metrics.serviceMonitr.enabled=true", "serviceMonitr"),  # a typo is not silently ignored
])
def test_helm_refuses_values_that_cannot_work(value, message):
    refused = subprocess.run([str(BIN / "helm"), "template", NAME, str(CHART), "--set", value],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and message in refused.stderr, refused.stderr





def test_the_packages_descriptions_speak_of_every_kind():
    """The chart's description and NOTES, and the Python package's description, name every kind the build serves."""
    from controller.kinds import registry
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())["description"]
    notes = (CHART / "templates" / "NOTES.txt").read_text()
    described = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["description"]
    for kind in registry.KINDS.values():
        for where, text in (("Chart.yaml", chart), ("NOTES.txt", notes), ("pyproject.toml", described)):
            assert kind.api.kind in text, (where, kind.api.kind)
        assert kind.api.plural in notes  # `kubectl get` of each kind, and what deleting the CRDs deletes
