"""Generate localcluster/endpoints/k8s_protobuf.py: the protobuf schema of the built-in kinds localcluster serves.

The facts come from Kubernetes' published sources, read from git clones at one release tag:
- the field numbers, types and labels from the `generated.proto` files of k8s.io/api and
  k8s.io/apimachinery (what go-to-protobuf published for that release);
- how each field reads as JSON from the Go types those files were generated from (`types.go` and its
  neighbours): the `json` tag's name and its omitempty/omitzero options, whether the Go field is a
  pointer, and whether it is inlined (an embedded struct with no JSON name, as Volume's VolumeSource).
Every proto field must match a Go field with the same number, label and name, and the other way round;
anything this script does not understand stops it, so nothing in the output is guessed.

The messages kept are those reachable from the built-in kinds of localcluster/storage/resources.py (whose
group has a package in k8s.io/api) and their create-only subresources' kinds (TokenRequest), plus
meta/v1 DeleteOptions (DELETE bodies) and runtime.Unknown (the envelope of every protobuf body).

Usage (clones of github.com/kubernetes/api and github.com/kubernetes/apimachinery, bare or not, with tags):
    python scripts/gen_k8s_protobuf.py --api ../api --apimachinery ../apimachinery --ref v0.35.7
The tag is the release of the API version localcluster reports (discovery.SERVER_VERSION, 1.35).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from localcluster.storage.resources import builtin_types  # noqa: E402

OUTPUT = ROOT / "localcluster" / "endpoints" / "k8s_protobuf.py"
META = "k8s.io.apimachinery.pkg.apis.meta.v1"
EXTRA_ROOTS = [f"{META}.DeleteOptions", "k8s.io.apimachinery.pkg.runtime.Unknown"]
SCALARS = {"string", "bytes", "bool", "int32", "int64", "uint32", "uint64", "double", "float"}
# Go types whose JSON is their own MarshalJSON, not their fields: the runtime renders each by this name.
CUSTOM_JSON = {
    f"{META}.Time": "time",
    f"{META}.MicroTime": "microtime",
    f"{META}.FieldsV1": "fieldsv1",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "quantity",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "intorstring",
    "k8s.io.apimachinery.pkg.runtime.Unknown": "envelope",  # read by the decoder, never rendered as JSON
}


@dataclass
class ProtoField:
    number: int
    name: str
    label: str  # optional, repeated or map
    type: str  # a scalar or a message's full name; for maps the value's
    key: str = ""  # a map's key type


@dataclass
class GoField:
    number: int
    proto_name: str
    json_name: str
    options: set[str]
    pointer: bool
    anonymous: bool


@dataclass
class Package:
    name: str
    messages: dict[str, list[ProtoField]] = field(default_factory=dict)
    imports: list[str] = field(default_factory=list)
    structs: dict[str, dict[int, GoField]] = field(default_factory=dict)
    slices: set[str] = field(default_factory=set)  # `type X []T`: a message wrapping `items`
    custom_json: set[str] = field(default_factory=set)


class Sources:
    def __init__(self, api: Path, apimachinery: Path, ref: str) -> None:
        self.repos = {"k8s.io/api": api, "k8s.io/apimachinery": apimachinery}
        self.ref = ref
        self.packages: dict[str, Package] = {}

    def _git(self, repo: str, *args: str) -> str:
        return subprocess.run(["git", "-C", str(self.repos[repo]), *args], check=True, capture_output=True,
                              text=True).stdout

    def _location(self, package: str) -> tuple[str, str]:
        """(repository, directory) of a proto package: k8s.io.api.core.v1 -> (k8s.io/api, core/v1)."""
        for repo in self.repos:
            prefix = repo.replace("/", ".") + "."
            if package.startswith(prefix):
                return repo, package[len(prefix):].replace(".", "/")
        raise SystemExit(f"no repository holds proto package {package}")

    def has_package(self, package: str) -> bool:
        repo, directory = self._location(package)
        return bool(self._git(repo, "ls-tree", "--name-only", self.ref, f"{directory}/generated.proto").strip())

    def package(self, name: str) -> Package:
        if name not in self.packages:
            repo, directory = self._location(name)
            pkg = Package(name)
            parse_proto(self._git(repo, "show", f"{self.ref}:{directory}/generated.proto"), pkg)
            for path in self._git(repo, "ls-tree", "--name-only", self.ref, f"{directory}/").split():
                if path.endswith(".go") and not path.endswith(("_test.go", ".pb.go")) and "zz_generated" not in path:
                    parse_go(self._git(repo, "show", f"{self.ref}:{path}"), pkg)
            self.packages[name] = pkg
        return self.packages[name]

    def message(self, full_name: str) -> tuple[Package, list[ProtoField]]:
        package, _, name = full_name.rpartition(".")
        pkg = self.package(package)
        if name not in pkg.messages:
            raise SystemExit(f"{full_name}: no such message in {package}'s generated.proto")
        return pkg, pkg.messages[name]


# --- generated.proto ------------------------------------------------------------------------------

FIELD = re.compile(r"^(optional|repeated) ([.\w]+) (\w+) = (\d+);$")
MAP_FIELD = re.compile(r"^map<(\w+), ([.\w]+)> (\w+) = (\d+);$")


def parse_proto(text: str, pkg: Package) -> None:
    """The subset of proto2 go-to-protobuf writes: top-level messages of optional, repeated and map fields."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    current: list[ProtoField] | None = None
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        if current is None:
            if line.startswith("message ") and line.endswith("{"):
                current = pkg.messages.setdefault(line.split()[1], [])
            elif line.startswith("package "):
                if line != f"package {pkg.name};":
                    raise SystemExit(f"{pkg.name}: unexpected {line!r}")
            elif line.startswith("import "):
                pkg.imports.append(line)
            elif not (line.startswith(("syntax ", "option "))):
                raise SystemExit(f"{pkg.name}: cannot read {line!r}")
            continue
        if line == "}":
            current = None
            continue
        match, mapped = FIELD.match(line), MAP_FIELD.match(line)
        if match:
            label, type_, name, number = match.groups()
            current.append(ProtoField(int(number), name, label, _resolve(type_, pkg.name)))
        elif mapped:
            key, value, name, number = mapped.groups()
            current.append(ProtoField(int(number), name, "map", _resolve(value, pkg.name), key))
        else:
            raise SystemExit(f"{pkg.name}: cannot read {line!r}")


def _resolve(type_: str, package: str) -> str:
    if type_ in SCALARS:
        return type_
    if type_.startswith("."):
        return type_[1:]
    if "." in type_:
        raise SystemExit(f"{package}: relative qualified type {type_!r}")
    return f"{package}.{type_}"


# --- Go types -------------------------------------------------------------------------------------

STRUCT = re.compile(r"^type (\w+) struct \{$")
GO_TYPE = r"(?:\*|\[\])*(?:map\[[\w.]+\](?:\*|\[\])*[\w.]+|[\w.]+)"
GO_FIELD = re.compile(rf"^\s+(?:(\w+)\s+)?({GO_TYPE})\s+`([^`]*)`")
TAG = re.compile(r'(\w+):"([^"]*)"')


def parse_go(text: str, pkg: Package) -> None:
    """Struct fields with a protobuf tag, named slice types and types with their own MarshalJSON."""
    pkg.slices.update(re.findall(r"^type (\w+) \[\]", text, flags=re.M))
    pkg.custom_json.update(re.findall(r"^func \(\w+ \*?(\w+)\) MarshalJSON\(\)", text, flags=re.M))
    struct: dict[int, GoField] | None = None
    for line in text.splitlines():
        start = STRUCT.match(line)
        if start:
            struct = pkg.structs.setdefault(start.group(1), {})
            continue
        if struct is None:
            continue
        if line == "}":
            struct = None
            continue
        match = GO_FIELD.match(line)
        if not match:
            continue
        name, go_type, tag = match.groups()
        tags = dict(TAG.findall(tag))
        if "protobuf" not in tags or tags["protobuf"] == "-":
            continue
        # Only the tag's number and name are read: its wire type and label are not always right, and
        # generated.proto rules (scheduling/v1's int32 `value` is tagged "bytes", PodSpec's repeated
        # `tolerations` "opt").
        _, number, *rest = tags["protobuf"].split(",")
        options = dict(p.split("=", 1) for p in rest if "=" in p)
        json_name, *json_options = tags.get("json", "").split(",")
        struct[int(number)] = GoField(int(number), options.get("name", ""), json_name, set(json_options),
                                      go_type.startswith("*"), name is None)


# --- the closure and the output -------------------------------------------------------------------

def roots(sources: Sources) -> dict[tuple[str, str], str]:
    """(apiVersion, kind) -> message, for each built-in kind whose group k8s.io/api publishes."""
    out = {}
    kinds = [(rt.group, rt.version, rt.kind) for rt in builtin_types()]
    # and the kinds of their create-only subresources (serviceaccounts/token: TokenRequest)
    kinds += [sub[1:] for rt in builtin_types() for sub in rt.create_subresources]
    for group, version, kind in kinds:
        package = f"k8s.io.api.{group.split('.')[0] if group else 'core'}.{version}"
        if sources.has_package(package):
            out[(f"{group}/{version}" if group else version, kind)] = f"{package}.{kind}"
    return out


def message_entry(sources: Sources, full_name: str) -> tuple[str, list[tuple]]:
    """(how the message reads as JSON, its fields as (number, name, type, JSON name, flags))."""
    pkg, proto_fields = sources.message(full_name)
    name = full_name.rpartition(".")[2]
    if name in pkg.custom_json:
        if full_name not in CUSTOM_JSON:
            raise SystemExit(f"{full_name} has its own MarshalJSON: teach the script and the decoder its JSON")
        return CUSTOM_JSON[full_name], [(f.number, f.name, _type(f), "", "") for f in proto_fields]
    if name in pkg.slices:
        if [(f.name, f.label) for f in proto_fields] != [("items", "repeated")]:
            raise SystemExit(f"{full_name}: a Go slice type whose message is not just `repeated items`")
        return "list", [(f.number, f.name, _type(f), "", "") for f in proto_fields]
    go_fields = pkg.structs.get(name)
    if go_fields is None:
        raise SystemExit(f"{full_name}: no Go struct {name} in its package")
    if sorted(go_fields) != sorted(f.number for f in proto_fields):
        raise SystemExit(f"{full_name}: proto fields {sorted(f.number for f in proto_fields)} but Go fields "
                         f"{sorted(go_fields)}")
    fields = []
    for f in proto_fields:
        go = go_fields[f.number]
        if go.proto_name not in ("", f.name):
            raise SystemExit(f"{full_name}.{f.name}: the Go tag says {go}")
        if "omitzero" in go.options and CUSTOM_JSON.get(f.type) not in ("time", "microtime"):
            raise SystemExit(f"{full_name}.{f.name}: omitzero on a type whose zero the decoder does not know")
        inline = go.anonymous and not go.json_name
        if not go.json_name and not inline:
            raise SystemExit(f"{full_name}.{f.name}: a named Go field without a JSON name")
        flags = "".join(flag for flag, on in (("e", "omitempty" in go.options), ("z", "omitzero" in go.options),
                                              ("p", go.pointer), ("i", inline)) if on)
        fields.append((f.number, f.name, _type(f), go.json_name, flags))
    return "struct", fields


def _type(f: ProtoField) -> str:
    if f.label == "map":
        return f"map<{f.key},{f.type}>"
    return f"[]{f.type}" if f.label == "repeated" else f.type


def generate(sources: Sources) -> str:
    kinds = roots(sources)
    messages: dict[str, tuple[str, list[tuple]]] = {}
    queue = deque([*kinds.values(), *EXTRA_ROOTS])
    while queue:
        name = queue.popleft()
        if name in messages:
            continue
        messages[name] = message_entry(sources, name)
        for _, _, type_, _, _ in messages[name][1]:
            target = type_.removeprefix("[]").split(",")[-1].rstrip(">")
            if target not in SCALARS and target not in messages:
                queue.append(target)
    by_package: dict[str, dict] = {}
    for name in sorted(messages):
        package, _, short = name.rpartition(".")
        by_package.setdefault(package, {})[short] = messages[name]
    lines = ['"""The protobuf schema of the built-in kinds localcluster serves: GENERATED, do not edit.',
             "",
             f"Made by scripts/gen_k8s_protobuf.py from k8s.io/api and k8s.io/apimachinery {sources.ref}: their",
             "generated.proto files, and the JSON tags of the Go types those were generated from.",
             'Read by localcluster/endpoints/protobuf.py.',
             '"""',
             "",
             f"REF = {sources.ref!r}",
             "",
             "# (apiVersion, kind) -> the message of that kind",
             "KINDS: dict[tuple[str, str], str] = {"]
    for key, value in sorted(kinds.items()):  # within the project's line length
        entry = f"    {key!r}: {value!r},"
        lines += [entry] if len(entry) <= 120 else [f"    {key!r}:", f"        {value!r},"]
    lines += ["}",
              "",
              "# package -> message -> (JSON form, fields); packages in dependency order. The JSON form is",
              "# 'struct' (fields by their JSON names), 'list' (a Go slice type: its `items`) or the name of a Go",
              "# type's own MarshalJSON. A field is (number, proto name, type, JSON name, flags). The type is a",
              "# scalar or a message, as []T when repeated, or map<K,V>; a message without a package is in the",
              "# message's own. The flags are e (omitempty), z (omitzero), p (a Go pointer) and i (an inlined",
              "# struct, whose fields are the parent's).",
              "PACKAGES: dict[str, dict[str, tuple[str, tuple[tuple[int, str, str, str, str], ...]]]] = {"]
    for package in _dependency_order(by_package):
        lines.append(f"    {package!r}: {{")
        for short, (form, fields) in by_package[package].items():
            lines.append(f"        {short!r}: ({form!r}, (")
            for number, name, type_, json_name, flags in fields:
                line = f"            ({number}, {name!r}, {_local(type_, package)!r}, {json_name!r}, {flags!r}),"
                if len(line) > 118:
                    line = line.replace(f"{name!r}, ", f"{name!r},\n                ", 1)
                lines.append(line)
            lines.append("        )),")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _local(type_: str, package: str) -> str:
    """A type as written in the output: messages of `package` without it."""
    return re.sub(rf"(?<![\w.]){re.escape(package)}\.(\w+)$", r"\1", type_.replace(f",{package}.", ",")
                  .replace(f"<{package}.", "<"))


def _dependency_order(by_package: dict[str, dict]) -> list[str]:
    deps = {p: {t.removeprefix("[]").split(",")[-1].rstrip(">").rpartition(".")[0]
                for _, fields in messages.values() for _, _, t, _, _ in fields} - {p, ""}
            for p, messages in by_package.items()}
    order: list[str] = []
    while len(order) < len(deps):
        ready = sorted(p for p in deps if p not in order and deps[p] <= set(order))
        if not ready:
            raise SystemExit(f"packages import each other: {deps}")
        order.extend(ready)
    return order


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--api", type=Path, required=True, help="a git clone of github.com/kubernetes/api")
    parser.add_argument("--apimachinery", type=Path, required=True,
                        help="a git clone of github.com/kubernetes/apimachinery")
    parser.add_argument("--ref", default="v0.35.7", help="the release tag to read in both")
    args = parser.parse_args()
    OUTPUT.write_text(generate(Sources(args.api, args.apimachinery, args.ref)))
    print(f"wrote {OUTPUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
