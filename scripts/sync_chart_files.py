"""Copy into the Helm chart the files it shares with manifests/: its CRDs, RBAC rules, dashboard and alerts.

The CRDs are those the kind registry generates (controller/kinds/registry.py, crd_files): a kind added there is
copied with no change here.

The chart holds real copies, not symbolic links: Helm warns `found symbolic link in path` on every command for
each link, and a packaged chart (`helm package`) must carry the files themselves. manifests/ is where they are
made (the CRD generators, scripts/make_dashboard.py) and edited; run this after changing one, and
tests/program/test_chart_files.py fails while a copy differs.

    python scripts/sync_chart_files.py          # write the copies
    python scripts/sync_chart_files.py --check  # exit 1 naming the stale copies
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controller.kinds import registry  # noqa: E402

CHART = ROOT / "charts" / "genericjob-controller"
COPIES = {  # the chart's file -> its source in manifests/
    **{f"crds/{name}": f"manifests/crds/{name}" for name in registry.crd_files()},
    "files/creator-privilege-binding.yaml": "manifests/components/creator-privilege/binding.yaml",
    "files/creator-privilege-policy.yaml": "manifests/components/creator-privilege/policy.yaml",
    "files/dashboard.json": "manifests/components/monitoring/dashboard.json",
    "files/prometheusrule.yaml": "manifests/components/monitoring/prometheusrule.yaml",
    "files/rbac.yaml": "manifests/rbac.yaml",
    "files/user-rbac.yaml": "manifests/user-rbac.yaml",
}


def stale() -> list[str]:
    """The chart's copies that are missing, links, or differ from their source."""
    return [name for name, source in COPIES.items()
            if (CHART / name).is_symlink() or not (CHART / name).is_file()
            or (CHART / name).read_bytes() != (ROOT / source).read_bytes()]


def write() -> list[str]:
    written = stale()
    for name in written:
        path = CHART / name
        path.unlink(missing_ok=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((ROOT / COPIES[name]).read_bytes())
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say which copies are stale (exit 1 if any)")
    if parser.parse_args(argv).check:
        names = stale()
        for name in names:
            print(f"stale: {CHART.relative_to(ROOT) / name} (from {COPIES[name]}): "
                  "run python scripts/sync_chart_files.py")
        return 1 if names else 0
    for name in write():
        print(f"wrote {CHART.relative_to(ROOT) / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
