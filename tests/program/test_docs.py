"""The docs cannot drift silently: their links reach a file and a heading that exist, the README lists every
page of docs/, and a doc that speaks of the job kinds as a set speaks of all of the registry's
(controller/kinds/registry.py) — the drift that PyTorchTrainingJob's arrival left ("both kinds", CRD lists
and roles without it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from controller.kinds.registry import KINDS

ROOT = Path(__file__).resolve().parents[2]
# Every page a reader is sent to; BENCHMARKS.md and RELIABILITY.md record runs as they were measured (a figure
# of "both kinds" from before the third is history), so only their links are checked.
DOCS = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md"))]
LINKED = [*DOCS, ROOT / "BENCHMARKS.md", ROOT / "RELIABILITY.md"]

FENCE = re.compile(r"^ *```.*?^ *```", re.S | re.M)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *#* *$", re.M)
SECTION_REFERENCE = re.compile(r"\b([\w./-]+\.md|README|ARCHITECTURE|RELIABILITY|BENCHMARKS)(?:'s)?,? \"([^\"]+)\"")
COUNT_WORDS = {"both": 2, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
# "both kinds", "the three job kinds" (in code blocks' comments too), not "two kinds of probe".
COUNTED = re.compile(rf"\b({'|'.join(COUNT_WORDS)})\s+(?:job\s+)?kinds\b(?!\s+of\b)", re.I)


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def prose(text: str) -> str:
    """The text without its fenced code blocks: a link or a `#` line in code is neither a link nor a heading."""
    return FENCE.sub("", text)


def blocks(text: str) -> list[str]:
    """Paragraphs, list items and table rows, each joined into one line: where a sentence's list is whole."""
    found = []
    for paragraph in re.split(r"\n\s*\n", prose(text)):
        for block in re.split(r"\n(?=\s*(?:[-*|] |\d+\. |#))", paragraph):
            found.append(" ".join(block.split()))
    return found


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: link text kept, lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in a markdown file, repeated headings numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(prose(path.read_text())):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(doc: Path) -> list[str]:
    broken = []
    for target in LINK.findall(prose(doc.read_text())):
        if re.match(r"[a-z]+:", target):
            continue  # a URL: not this repository's to check
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        if not path.exists():
            broken.append(f"{target}: no file {file}")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target}: no heading #{anchor} in {path.name}")
    return broken


def broken_references(doc: Path) -> list[str]:
    """Sections named in prose, `README's "Quick start"` or `RELIABILITY.md, "The engine's model test"`, that
    no heading of that file begins with."""
    broken = []
    for name, section in SECTION_REFERENCE.findall(prose(doc.read_text())):
        file = f"{name}.md" if not name.endswith(".md") else name
        path = next((p for p in (doc.parent / file, ROOT / file) if p.exists()), None)
        headings = [h.replace("`", "").lower() for h in HEADING.findall(prose(path.read_text()))] if path else []
        if not any(heading.startswith(section.lower()) for heading in headings):
            broken.append(f'{name}, "{section}"')
    return broken


@pytest.mark.parametrize("doc", LINKED, ids=rel)
def test_every_link_reaches_a_file_and_heading_that_exist(doc):
    assert broken_links(doc) == []
    assert broken_references(doc) == []


def test_the_link_check_sees_a_missing_file_and_a_missing_heading(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## Its section\n\n## Its section\n")
    doc = tmp_path / "doc.md"
    doc.write_text("[ok](other.md#its-section-1) [gone](gone.md) [no](other.md#nowhere) [self](#missing)\n"
                   "```\n[in code](nowhere.md)\n```\n"
                   'As other.md\'s "Its section" says, and other.md, "Nowhere", and gone.md\'s "Any".\n')
    assert broken_links(doc) == ["gone.md: no file gone.md", "other.md#nowhere: no heading #nowhere in other.md",
                                 "#missing: no heading #missing in doc.md"]
    assert broken_references(doc) == ['other.md, "Nowhere"', 'gone.md, "Any"']


def test_headings_slug_as_github_slugs_them():
    assert slug("Leader election, take-over and disruptions") == "leader-election-take-over-and-disruptions"
    assert slug("Monitoring (opt-in)") == "monitoring-opt-in"
    assert slug("`make local` and [the guide](x.md)") == "make-local-and-the-guide"


def test_the_readme_lists_every_page_of_docs():
    readme = (ROOT / "README.md").read_text()
    listed = readme.partition("\n## Documentation")[2].split("\n## ")[0]
    assert listed, "README.md has no Documentation section"
    missing = [rel(page) for page in sorted((ROOT / "docs").glob("*.md")) if f"]({rel(page)}" not in listed]
    assert missing == []


def kinds_spoken_of_as_a_set(block: str) -> set[str]:
    """The kinds a block names as kinds (plural, resource or CRD file): "GenericJobs and TensorFlowTrainingJobs",
    "genericjobs, tensorflowtrainingjobs", "crds/genericjob.yaml"."""
    return {name for name, kind in KINDS.items()
            if re.search(rf"\b(?:{name}s|{kind.api.plural}|{name.lower()}\.yaml)\b", block)}


def kinds_named(block: str) -> set[str]:
    return {name for name in KINDS if re.search(rf"\b{name}", block)} | kinds_spoken_of_as_a_set(block)


def partial_lists(text: str) -> list[str]:
    """Blocks that speak of two or more kinds as a set but leave one of the registry's out, and counts of the
    kinds ("both kinds") that are not the registry's."""
    found = [block for block in blocks(text)
             if len(kinds_spoken_of_as_a_set(block)) >= 2 and kinds_named(block) != set(KINDS)]
    found += [match.group(0) for match in COUNTED.finditer(text)
              if COUNT_WORDS[match.group(1).lower()] != len(KINDS)]
    return found


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_a_doc_speaking_of_the_kinds_names_all_of_the_registrys(doc):
    assert partial_lists(doc.read_text()) == []


def test_the_kinds_check_sees_a_count_and_a_list_short_of_the_registry():
    first, second, *_ = KINDS
    wrong = next(word for word, count in COUNT_WORDS.items() if count == len(KINDS) + 1)
    text = (f"Serves {wrong} kinds.\n\nUsers may create {first}s and\n{second}s there.\n\n"
            f"- `crds/{first.lower()}.yaml` only\n\n" + ", ".join(f"{name}s" for name in KINDS) + "\n")
    assert partial_lists(text) == [f"Users may create {first}s and {second}s there.", f"{wrong} kinds"]


def test_the_layout_says_where_a_kind_is_and_names_no_folder_that_is_not_one():
    """A new kind's folder needs no row (its own folder is all it touches); a row of a kind gone is stale."""
    layout = (ROOT / "docs" / "development.md").read_text().partition("\n## Layout")[2].split("\n## ")[0]
    assert "`controller/kinds/<kind>/`" in layout
    folders = {type(kind).__module__.rpartition(".")[0].replace(".", "/") for kind in KINDS.values()}
    assert set(re.findall(r"`(controller/kinds/\w+)/`", layout)) <= folders
