"""The raw figure of a mutmut run, per module (`make mutants`; RELIABILITY.md reports it): every mutant of the
module's last run counted, killed (a test failed, or the type check or a timeout caught it) or not (survived, no
test reached it, not checked yet), and the names of those not killed, for `mutmut show NAME`. With
`--check-named`, every mutant not killed must be named in RELIABILITY.md's table of the final run's survivors (each
with why it is equivalent), and every mutant named there must be one not killed: the report names those that are not
and exits 1.

    .venv/bin/python -m tests.mutation.mutmut_report [controller/jobs/decisions/held.py ...] [--survivors]
        [--check-named]
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

KILLED = frozenset({"killed", "timeout", "caught by type check", "segfault"})

# The section of RELIABILITY.md whose table names the final run's survivors: from its heading to the next "### ".
NAMED_SECTION = "### The figure (final run"
_MUTANT = re.compile(r"`(controller\.[\w.ǁ]+__mutmut_\d+)`")


def modules() -> list[str]:
    """The modules `make mutants` mutates: pyproject.toml's [tool.mutmut] only_mutate, expanded."""
    import tomllib

    config = tomllib.loads(Path("pyproject.toml").read_text())["tool"]["mutmut"]
    found: set[str] = set()
    for pattern in config["only_mutate"]:
        found.update(str(p) for p in Path(".").glob(pattern) if p.suffix == ".py" and p.name != "__init__.py")
    return sorted(found)


def statuses(module: str) -> dict[str, str]:
    """mutant name -> mutmut's status, from the module's results (mutants/<module>.meta)."""
    from mutmut.stats import status_by_exit_code

    meta = Path("mutants") / f"{module}.meta"
    if not meta.exists():
        return {}
    codes = json.loads(meta.read_text()).get("exit_code_by_key") or {}
    return {name: status_by_exit_code[code] for name, code in codes.items()}


def named_survivors(text: str) -> set[str]:
    """The mutants named in the first cell of the rows of the tables of RELIABILITY.md's final-run section."""
    start = text.find(NAMED_SECTION)
    if start < 0:
        return set()
    end = text.find("\n### ", start + len(NAMED_SECTION))
    names: set[str] = set()
    for line in text[start:end if end >= 0 else None].splitlines():
        cells = line.split("|")
        if line.startswith("|") and len(cells) > 2:
            names.update(_MUTANT.findall(cells[1]))
    return names


def unnamed(left: list[str], named: set[str], measured: list[str]) -> tuple[list[str], list[str]]:
    """Mutants not killed that the table does not name, and names in the table of the measured modules that are not
    of a mutant left (killed since, or renumbered)."""
    prefixes = tuple(module.removesuffix(".py").replace("/", ".") + "." for module in measured)
    return (sorted(set(left) - named),
            sorted(name for name in named - set(left) if name.startswith(prefixes)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help="modules (paths); default: every module mutmut mutates")
    parser.add_argument("--survivors", action="store_true", help="name every mutant not killed")
    parser.add_argument("--check-named", action="store_true",
                        help="exit 1 unless RELIABILITY.md's final survivors table names exactly the mutants left")
    args = parser.parse_args(argv)
    total: Counter[str] = Counter()
    print("| module | mutants | killed | survived | no tests | not checked | killed, raw |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    left: list[tuple[str, str]] = []
    measured = args.modules or modules()
    for module in measured:
        found = statuses(module)
        counts = Counter("killed" if s in KILLED else s for s in found.values())
        total.update(counts)
        share = f"{100 * counts['killed'] / len(found):.1f} %" if found else "-"
        print(f"| `{module}` | {len(found)} | {counts['killed']} | {counts['survived']} | {counts['no tests']} | "
              f"{counts['not checked']} | {share} |")
        left += [(name, status) for name, status in sorted(found.items()) if status not in KILLED]
    mutants = sum(total.values())
    share = f"{100 * total['killed'] / mutants:.1f} %" if mutants else "-"
    print(f"| **all** | {mutants} | {total['killed']} | {total['survived']} | {total['no tests']} | "
          f"{total['not checked']} | {share} |")
    if args.survivors:
        for name, status in left:
            print(f"{status}: {name}")
    if args.check_named:
        missing, stale = unnamed([name for name, _ in left], named_survivors(Path("RELIABILITY.md").read_text()),
                                 measured)
        for name in missing:
            print(f"not named in RELIABILITY.md's survivors table: {name}")
        for name in stale:
            print(f"named in RELIABILITY.md's survivors table but not left by this run: {name}")
        if missing or stale:
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
