"""Write every list of the job kinds outside the code from the registry (controller/kinds/registry.py), the only
list of kinds: the CRDs kustomize applies, the controller's RBAC rules (cluster-wide and per namespace), the user
roles, the creator-privilege policy, the admission webhooks (kustomize's and the chart's), the kinds the
chart's notes and descriptions name, and the docs' sentences and commands that name every kind. The chart's
copies of the CRDs follow from it too (sync_chart_files.py).

Each list is found by its shape and rewritten in place, comments and all else left as written:

- `resources: ["<first kind's plural>[/sub]", ...]`: one entry per kind, with the subresources the first kind's
  entries have, in their order;
- kustomization.yaml's `- crds/<file>` lines: the registry's CRD files (registry.crd_files);
- the webhooks of manifests/webhook.yaml: one per kind, made from the first kind's;
- the chart's `range $plural := list "..."`, `kubectl get <plurals>` and "<Kind>, <Kind> and <Kind>";
- in the docs, every span `<!-- kinds: TEMPLATE -->...<!-- /kinds -->`: TEMPLATE written for each kind ({kind},
  {plural}, {group}, {label}: its pods' name label), joined "A, B and C"; and `kubectl delete crd <CRDs>`.

    python scripts/sync_kind_lists.py          # rewrite the lists
    python scripts/sync_kind_lists.py --check  # exit 1 naming the stale files (tests/program/test_kind_lists.py)
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controller.jobs.kind import JobKind  # noqa: E402
from controller.kinds import registry  # noqa: E402

RESOURCES = re.compile(r'^(?P<head>\s*(?:- )?resources: )\[(?P<items>[^\]\n]*)\](?P<tail>[ \t]*)$', re.M)
CRD_LINES = re.compile(r"^(?P<indent>[ \t]*)- crds/\S+\.yaml\n(?:(?P=indent)- crds/\S+\.yaml\n)*", re.M)
CHART_RANGE = re.compile(r'(range \$plural := list)(?: "[^"]*")+')
KUBECTL_GET = re.compile(r"(kubectl get )([a-z0-9.,]+)( -A)")
DOC_SPAN = re.compile(r"<!-- kinds: (?P<template>.+?) -->.*?<!-- /kinds -->", re.S)
WEBHOOK = re.compile(r"^  - name: (?P<plural>[a-z0-9]+)\.(?P<group>[a-z0-9.]+)\n(?:(?:    |\s*\n).*\n?)*", re.M)


def plurals(kinds: Sequence[JobKind]) -> list[str]:
    return [kind.api.plural for kind in kinds]


def resource_lists(text: str, kinds: Sequence[JobKind]) -> str:
    """Every `resources: [...]` whose first entry is the first kind's: one entry per kind and subresource."""
    first = kinds[0].api.plural

    def rewrite(match: re.Match) -> str:
        items = re.findall(r'"([^"]*)"', match["items"])
        if not items or items[0].split("/")[0] != first:
            return match[0]
        subresources = [item[len(first):] for item in items if item.split("/")[0] == first]
        listed = ", ".join(f'"{plural}{sub}"' for plural in plurals(kinds) for sub in subresources)
        return f"{match['head']}[{listed}]{match['tail']}"

    return RESOURCES.sub(rewrite, text)


def crd_lines(text: str, kinds: Sequence[JobKind]) -> str:
    """kustomization.yaml's run of `- crds/<file>` lines: every CRD file the registry generates."""
    files = registry.crd_files(kinds)
    return CRD_LINES.sub(lambda m: "".join(f"{m['indent']}- crds/{name}\n" for name in files), text, count=1)


def webhooks(text: str, kinds: Sequence[JobKind]) -> str:
    """manifests/webhook.yaml's webhooks: the first kind's as written, then one per other kind made from it
    (its comments left out), the kind's plural and path in place of the first's."""
    entries = list(WEBHOOK.finditer(text))
    if not entries:
        return text
    first, model = kinds[0].api, entries[0][0]
    copy = "".join(line for line in model.splitlines(keepends=True) if not line.lstrip().startswith("#"))
    made = [model] + [copy.replace(f"{first.plural}.{first.group}", f"{kind.api.plural}.{kind.api.group}")
                      .replace(f"-{first.kind.lower()}\n", f"-{kind.api.kind.lower()}\n")
                      .replace(f'["{first.plural}"]', f'["{kind.api.plural}"]') for kind in kinds[1:]]
    made[-1] = made[-1].rstrip("\n") + "\n"
    return text[:entries[0].start()] + "".join(made) + text[entries[-1].end():]


def prose_list(items: Sequence[str]) -> str:
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else items[0]


def chart_lists(text: str, kinds: Sequence[JobKind]) -> str:
    """The chart's `range $plural := list ...`, `kubectl get <plurals> -A`, and the kinds named in prose."""
    text = CHART_RANGE.sub(lambda m: m[1] + "".join(f' "{plural}"' for plural in plurals(kinds)), text)
    text = KUBECTL_GET.sub(lambda m: m[1] + ",".join(plurals(kinds)) + m[3]
                           if m[2].split(",")[0] == kinds[0].api.plural else m[0], text)
    names = [kind.api.kind for kind in kinds]
    return re.sub(rf"{re.escape(names[0])}(?:, [A-Z]\w*)* and [A-Z]\w*", prose_list(names), text)


def doc_lists(text: str, kinds: Sequence[JobKind]) -> str:
    """A doc's marked spans, each its template written for every kind, and its `kubectl delete crd` of the kinds'
    CRDs (the PodGroup's after them kept)."""

    def span(match: re.Match) -> str:
        if "--" in match["template"]:  # (CommonMark's older rule, GitHub's: no "--" inside a comment)
            raise ValueError(f"a kinds span's template may not hold '--': {match['template']}")
        made = [match["template"].format(kind=kind.api.kind, plural=kind.api.plural, group=kind.api.group,
                                         label=kind.api.name_label) for kind in kinds]
        return f"<!-- kinds: {match['template']} -->{prose_list(made)}<!-- /kinds -->"

    group = re.escape(kinds[0].api.group)
    crds = "".join(f"{kind.api.plural}.{kind.api.group} " for kind in kinds)
    text = re.sub(rf"(kubectl delete crd )(?:[a-z0-9]+\.{group} )+", lambda m: m[1] + crds, text)
    return DOC_SPAN.sub(span, text)


# file -> how its lists are rewritten
FILES: dict[str, Callable[[str, Sequence[JobKind]], str]] = {
    "manifests/kustomization.yaml": crd_lines,
    "manifests/rbac.yaml": resource_lists,
    "manifests/user-rbac.yaml": resource_lists,
    "manifests/webhook.yaml": webhooks,
    "manifests/components/creator-privilege/policy.yaml": resource_lists,
    "overlays/namespaced/watched-namespaces-rbac.yaml": resource_lists,
    "charts/genericjob-controller/templates/webhook.yaml": chart_lists,
    "charts/genericjob-controller/templates/NOTES.txt": chart_lists,
    "charts/genericjob-controller/Chart.yaml": chart_lists,
    "pyproject.toml": chart_lists,
    "README.md": doc_lists,
    "docs/local.md": doc_lists,
    "docs/operations.md": doc_lists,
    "docs/security.md": doc_lists,
    "docs/user-guide.md": doc_lists,
}


def generated(kinds: Sequence[JobKind] | None = None, root: Path = ROOT) -> dict[str, str]:
    """File -> its text with the lists of `kinds` (the registry's by default)."""
    kinds = list(kinds or registry.KINDS.values())
    if len({kind.api.group for kind in kinds}) != 1:
        raise ValueError("the RBAC rules list the kinds under one apiGroups entry: every kind must share a group")
    return {name: rewrite((root / name).read_text(), kinds) for name, rewrite in FILES.items()}


def stale() -> list[str]:
    return [name for name, text in generated().items() if (ROOT / name).read_text() != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say which files are stale (exit 1 if any)")
    if parser.parse_args(argv).check:
        names = stale()
        for name in names:
            print(f"stale: {name}: run python scripts/sync_kind_lists.py")
        return 1 if names else 0
    for name, text in generated().items():
        if (ROOT / name).read_text() != text:
            (ROOT / name).write_text(text)
            print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
