"""The user guide's "Why did my job fail?" (docs/user-guide.md): its example (examples/why-failed.yaml) run with
pods as processes, as `local` runs them, and what the guide shows of `kubectl get` (`-o wide` too: its MESSAGE) and
`kubectl describe` checked against the real kubectl's output, line by line (ages and times aside).
tests/program/test_readme.py runs the section's commands."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from .conftest import until

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "why-failed.yaml"


pytestmark = pytest.mark.runner("process")  # the cluster's pods run as real processes




SECTION = "## Why did my job fail?"  # in the user guide (README's, until issue 24 moved it)
AGE = re.compile(r"(?<![\w.:-])\d+[smhd](\d+[smh])?(?![\w.:-])")  # kubectl's ages: 8s, 2m3s, 5h


def section() -> str:
    """The section up to what it says of `local`'s progress lines."""
    text = (ROOT / "docs" / "user-guide.md").read_text()
    start = text.index(SECTION) + len(SECTION)
    return text[start:text.index("`local` explains", start)]


def blocks(kind: str) -> list[list[str]]:
    """The lines of the section's code blocks fenced as ```KIND (plain: "")."""
    found: list[list[str]] = []
    fence = None  # the opening fence of the block we are in
    for line in section().splitlines():
        if fence is None and line.startswith("```"):
            fence = line
            found.append([])
        elif fence is not None and line == "```":
            if fence != f"```{kind}":
                found.pop()
            fence = None
        elif fence is not None:
            found[-1].append(line)
    return found


def commands() -> list[list[str]]:
    """The section's kubectl commands, as argument lists (the `export` line aside)."""
    [block] = blocks("sh")
    return [shlex.split(line.split(" #")[0])[1:] for line in block if line.startswith(".venv/bin/kubectl ")]


def shown() -> list[str]:
    """Every line the section shows of kubectl's output ("..." stands for lines left out)."""
    return [line for block in blocks("") for line in block if line.strip() not in ("", "...")]


def normal(line: str) -> str:
    """A line with its ages as AGE and its runs of blanks as one: what does not depend on when it ran."""
    return " ".join(AGE.sub("AGE", line).split())


async def test_the_readmes_excerpts_are_what_kubectl_shows(cluster, controller, kubectl):
    assert [args[0] for args in commands()] == ["apply", "wait", "wait", "get", "get", "describe"]
    assert len(shown()) >= 18

    async def run_all() -> list[str] | None:
        outputs = []
        for args in commands():
            if args[0] == "apply":  # the example, from the repository's root, as the guide runs it
                args = [arg if not arg.startswith("examples/") else str(ROOT / arg) for arg in args]
            outputs.append((await kubectl.ok(*args)).out)
        real = {normal(line) for out in outputs for line in out.splitlines()}
        missing = [line for line in shown() if normal(line) not in real]
        return None if missing else outputs

    # Events are sent after the status write they describe: the last ones may trail the conditions waited on.
    await until(run_all, timeout=20.0, what="kubectl's output to show every line of the guide's excerpts")
