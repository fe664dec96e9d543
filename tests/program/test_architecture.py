"""ARCHITECTURE.md stays true to the code: "Adding a kind" lists the whole JobKind seam, and every path
it names exists."""

from __future__ import annotations

import re
from pathlib import Path

from controller.jobs.kind import JobKind

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "ARCHITECTURE.md").read_text()


def seam() -> set[str]:
    members = set(JobKind.__annotations__)
    members |= {name for name, value in vars(JobKind).items()
                if (callable(value) or isinstance(value, property)) and not name.startswith("_")}
    return members


def test_adding_a_kind_lists_every_member_of_the_seam():
    section = TEXT[TEXT.index("## Adding a kind"):]
    listed = set(re.findall(r"^- `(\w+)`", section, flags=re.M))
    assert listed == seam(), f"missing: {sorted(seam() - listed)}, not in JobKind: {sorted(listed - seam())}"
    assert len(listed) == 20


def test_every_path_it_names_exists():
    paths = {p for p in re.findall(r"`((?:controller|tests|localcluster|charts|manifests)/[\w/.<>-]+)`", TEXT)
             if "<" not in p}
    assert paths
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"ARCHITECTURE.md names paths that do not exist: {missing}"
