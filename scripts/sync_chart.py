"""Copy into the Helm chart what it shares with the kustomize install.

    python scripts/sync_chart.py          # copy
    python scripts/sync_chart.py --check  # exit 1 if a copy is stale (tests/program/test_packaging.py)

A chart cannot read files outside its directory, so these are copies: the generated CRDs (Helm
installs crds/ before the templates), the Grafana dashboard, and the PrometheusRule's alert groups.
Everything else the chart renders is compared with `kubectl kustomize` by the tests.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
MANIFESTS = ROOT / "manifests"
CHART = ROOT / "charts" / "genericjob-controller"
MONITORING = MANIFESTS / "components" / "monitoring"


def alert_groups() -> str:
    """The PrometheusRule's spec (its `groups:`) as written, comments included, dedented for the chart."""
    text = (MONITORING / "prometheusrule.yaml").read_text()
    _, found, spec = text.partition("\nspec:\n")
    assert found, "prometheusrule.yaml: no top-level spec"
    groups = textwrap.dedent(spec)
    assert yaml.safe_load(groups) == yaml.safe_load(text)["spec"], "spec: is not the file's last field"
    return "# Copied from manifests/components/monitoring/prometheusrule.yaml by scripts/sync_chart.py.\n" + groups


def copies() -> dict[Path, str]:
    wanted = {CHART / "crds" / crd.name: crd.read_text() for crd in sorted((MANIFESTS / "crds").glob("*.yaml"))}
    wanted[CHART / "files" / "dashboard.json"] = (MONITORING / "dashboard.json").read_text()
    wanted[CHART / "files" / "alerts.yaml"] = alert_groups()
    return wanted


def stale() -> list[Path]:
    wanted = copies()
    extra = [p for p in (CHART / "crds").glob("*") if p not in wanted]
    return [p for p, text in wanted.items() if not p.exists() or p.read_text() != text] + extra


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only report stale copies")
    if parser.parse_args().check:
        out_of_date = stale()
        for path in out_of_date:
            print(f"stale: {path.relative_to(ROOT)} (run python scripts/sync_chart.py)")
        return 1 if out_of_date else 0
    for path in (CHART / "crds").glob("*"):
        if path not in copies():
            path.unlink()
    for path, text in copies().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
