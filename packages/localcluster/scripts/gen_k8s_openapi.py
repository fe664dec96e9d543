"""Generate localcluster/validation/k8s_openapi.json.gz: the OpenAPI schemas of the built-in kinds localcluster serves.

The facts are Kubernetes' published OpenAPI spec (api/openapi-spec/swagger.json of kubernetes/kubernetes,
Swagger 2.0): every definition with its descriptions (what `kubectl explain` prints), its strategic merge
patch keys (`x-kubernetes-patch-merge-key`, `x-kubernetes-patch-strategy`: what `kubectl apply` computes
its patch with), its list and map types, and its `x-kubernetes-group-version-kind`. Nothing is edited;
the definitions kept are those reachable from the built-in kinds of localcluster/storage/resources.py (and their
lists), plus the meta/v1 types the REST operations name (Status, DeleteOptions, Patch). localcluster
serves them as the apiserver does: in /openapi/v3 per group-version (the v3 shape is derived when read,
localcluster/validation/builtin_schemas.py) and in /openapi/v2.

Usage, with a clone of github.com/kubernetes-client/python (bare or not, with tags), whose
`kubernetes/swagger.json.unprocessed` is the spec of the Kubernetes release it was generated from
(v35.0.0: release-1.35), or with the spec file itself:
    python scripts/gen_k8s_openapi.py --client-python ../python --ref v35.0.0
    python scripts/gen_k8s_openapi.py --swagger kubernetes/api/openapi-spec/swagger.json --source 'v1.35.0'
The release is the one localcluster reports (discovery.SERVER_VERSION, 1.35).
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from localcluster.storage.resources import builtin_types  # noqa: E402
from localcluster.validation.builtin_schemas import DATA, definition_name, references  # noqa: E402

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
OPERATION_TYPES = [META + "Status", META + "DeleteOptions", META + "Patch"]


def roots(definitions: dict) -> list[str]:
    """The served built-in kinds and their lists (the review kinds have none), and the operations' types."""
    names = []
    for rt in builtin_types():
        names.append(definition_name(rt.group, rt.version, rt.kind))
        listed = definition_name(rt.group, rt.version, rt.list_kind)
        if listed in definitions:
            names.append(listed)
    missing = [name for name in names + OPERATION_TYPES if name not in definitions]
    if missing:
        raise SystemExit(f"not in the spec: {', '.join(missing)}")
    return names + OPERATION_TYPES


def reachable(definitions: dict, start: list[str]) -> dict:
    seen: dict = {}
    todo = list(start)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if name not in definitions:
            raise SystemExit(f"{name} is referred to but not defined")
        seen[name] = definitions[name]
        todo.extend(references(seen[name]))
    return {name: seen[name] for name in sorted(seen)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--client-python", type=Path, help="a clone of kubernetes-client/python")
    parser.add_argument("--ref", default="v35.0.0", help="its tag (default v35.0.0: Kubernetes release-1.35)")
    parser.add_argument("--swagger", type=Path, help="or Kubernetes' api/openapi-spec/swagger.json itself")
    parser.add_argument("--source", help="what --swagger is, as recorded in the output")
    args = parser.parse_args()
    if args.swagger:
        text, source = args.swagger.read_text(), args.source or str(args.swagger)
    elif args.client_python:
        text = subprocess.run(["git", "-C", str(args.client_python), "show",
                               f"{args.ref}:kubernetes/swagger.json.unprocessed"],
                              check=True, capture_output=True, text=True).stdout
        source = (f"Kubernetes' api/openapi-spec/swagger.json as kubernetes-client/python {args.ref} keeps it "
                  f"(kubernetes/swagger.json.unprocessed)")
    else:
        parser.error("give --client-python or --swagger")
    definitions = json.loads(text)["definitions"]
    kept = reachable(definitions, roots(definitions))
    body = json.dumps({"source": source, "definitions": kept}, sort_keys=True, separators=(",", ":"))
    DATA.write_bytes(gzip.compress(body.encode(), compresslevel=9, mtime=0))
    print(f"{DATA.relative_to(ROOT)}: {len(kept)} definitions, {len(body)} bytes of JSON, "
          f"{DATA.stat().st_size} compressed")


if __name__ == "__main__":
    main()
