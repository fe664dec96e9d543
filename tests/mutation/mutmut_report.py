"""The raw figure of a mutmut run, per module (`make mutants`; RELIABILITY.md reports it): every mutant of the
module's last run counted, killed (a test failed, or the type check or a timeout caught it) or not (survived, no
test reached it, not checked yet), and the names of those not killed, for `mutmut show NAME`.

    .venv/bin/python -m tests.mutation.mutmut_report [controller/jobs/decisions/held.py ...] [--survivors]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

KILLED = frozenset({"killed", "timeout", "caught by type check", "segfault"})


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help="modules (paths); default: every module mutmut mutates")
    parser.add_argument("--survivors", action="store_true", help="name every mutant not killed")
    args = parser.parse_args(argv)
    total: Counter[str] = Counter()
    print("| module | mutants | killed | survived | no tests | not checked | killed, raw |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    left: list[tuple[str, str]] = []
    for module in args.modules or modules():
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
