"""`make generate` (scripts/generate.py): one command writes every generated file, and none is stale."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def generate():
    spec = importlib.util.spec_from_file_location("generate", ROOT / "scripts" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_generated_file_is_current():
    stale = [str(path.relative_to(ROOT)) for path in generate().run(check=True)]
    assert not stale, f"stale: {stale}: run make generate"


def test_make_generate_runs_it_and_every_generator_it_replaces_is_among_its_steps():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^generate: install\n\t\$\(BIN\)/python scripts/generate.py$", makefile, re.M)
    steps = [name for name, _ in generate().STEPS]
    assert steps == ["CRDs", "dashboard", "kind lists", "chart copies"]
