"""Regenerate every generated file of the repository, in the order they depend on each other (`make generate`).

    python scripts/generate.py          # write what is stale, print each file written
    python scripts/generate.py --check  # exit 1 naming the stale files (tests/program/test_generate.py)

1. the CRDs of every registered kind and the PodGroup's (controller/kinds/registry.py, crd_files: each kind's
   `crd` module) into manifests/crds/;
2. the Grafana dashboard (scripts/make_dashboard.py) into manifests/components/monitoring/;
3. every list of the kinds outside the code: kustomize's CRDs, the RBAC rules, the user roles, the webhooks, the
   namespaced overlay, the chart's notes, the docs' marked spans (scripts/sync_kind_lists.py);
4. the Helm chart's copies of what manifests/ holds, the files of steps 1 to 3 among them
   (scripts/sync_chart_files.py).

Not here: controller/jobs/schema/pod_template.json, made once from Kubernetes' own OpenAPI document
(scripts/make_pod_template_schema.py SWAGGER_JSON), which this repository does not hold; and the locks (`make lock`),
which ask PyPI.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controller.jobs.schema.crd import MANIFEST_DIR  # noqa: E402
from controller.kinds import registry  # noqa: E402


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def crds() -> dict[Path, str]:
    return {MANIFEST_DIR / name: text for name, text in registry.crd_files().items()}


def dashboard() -> dict[Path, str]:
    made = _script("make_dashboard")
    return {made.TARGET: json.dumps(made.dashboard(), indent=2) + "\n"}


def kind_lists() -> dict[Path, str]:
    return {ROOT / name: text for name, text in _script("sync_kind_lists").generated().items()}


def chart_copies() -> dict[Path, str]:
    """The chart's copies as their sources in manifests/ are now (so after the steps before it have written)."""
    sync = _script("sync_chart_files")
    return {sync.CHART / name: (ROOT / source).read_text() for name, source in sync.COPIES.items()}


STEPS: list[tuple[str, Callable[[], dict[Path, str]]]] = [
    ("CRDs", crds), ("dashboard", dashboard), ("kind lists", kind_lists), ("chart copies", chart_copies)]


def stale(path: Path, text: str) -> bool:
    return path.is_symlink() or not path.is_file() or path.read_text() != text


def run(check: bool) -> list[Path]:
    """Each step in turn: the files it would change (with `check`), else those it wrote."""
    changed: list[Path] = []
    for _, step in STEPS:
        for path, text in step().items():
            if not stale(path, text):
                continue
            changed.append(path)
            if not check:
                path.unlink(missing_ok=True)  # (a chart copy may have been a link)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say which files are stale (exit 1 if any)")
    check = parser.parse_args(argv).check
    changed = run(check)
    for path in changed:
        print(f"{'stale' if check else 'wrote'}: {path.relative_to(ROOT)}" + (": run make generate" if check else ""))
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
