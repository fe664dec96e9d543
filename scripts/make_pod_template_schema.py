"""Write controller/jobs/schema/pod_template.json: the schema of a Kubernetes 1.35 PodTemplateSpec, as a CRD embeds it.

    python scripts/make_pod_template_schema.py SWAGGER_JSON

SWAGGER_JSON is Kubernetes' Swagger 2.0 document of release 1.35: api/openapi-spec/swagger.json of
kubernetes/kubernetes on branch release-1.35 (kubernetes-client/python ships the same file as
kubernetes/swagger.json.unprocessed in its 35.0 release). The JSON written is what the CRD generators read
(controller/jobs/schema/crd.py `template_schema`); this script is only how it was made.

The schema is made structural, as a CRD needs: every $ref inlined, IntOrString and Quantity marked
`x-kubernetes-int-or-string` (a quantity also gets its pattern, as controller-gen writes it), Time a
date-time string, FieldsV1 preserved as given. Descriptions are left out: with them the schema is ten times
larger, and a CRD must stay within the 256 KiB of annotations a client-side `kubectl apply` needs for its
last-applied copy (tests/controller/test_crd.py checks the margin).

What pod validation enforces on a Deployment's template and Swagger cannot say is added: a container's (and an
init or ephemeral container's) name is a DNS-1123 label and its image is required. The defaults the v3 document
gives to the keys of two list maps are added too (a port's protocol TCP, an image pull secret's name ""), since a
CRD's list-map keys must be required or defaulted.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "controller" / "jobs" / "pod_template.json"
CORE = "io.k8s.api.core.v1."
META = "io.k8s.apimachinery.pkg."
QUANTITY_PATTERN = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)"
                    r"|(\.[0-9]+))))?$")
SPECIAL = {  # types whose Swagger form is not structural
    META + "util.intstr.IntOrString": {"x-kubernetes-int-or-string": True},
    META + "api.resource.Quantity": {"x-kubernetes-int-or-string": True, "pattern": QUANTITY_PATTERN},
    META + "apis.meta.v1.Time": {"type": "string", "format": "date-time"},
    META + "apis.meta.v1.FieldsV1": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
}
DROPPED = frozenset({"description", "x-kubernetes-patch-merge-key", "x-kubernetes-patch-strategy",
                     "x-kubernetes-unions", "x-kubernetes-group-version-kind"})
CONTAINER_NAME = {"pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63}
CONTAINER = {"required": ["name", "image"], "properties": {"name": CONTAINER_NAME, "image": {"minLength": 1}}}
ADDED = {  # definition -> required names and property constraints added
    CORE + "Container": CONTAINER,
    CORE + "EphemeralContainer": CONTAINER,
    CORE + "ContainerPort": {"properties": {"protocol": {"default": "TCP"}}},
    CORE + "LocalObjectReference": {"properties": {"name": {"default": ""}}},
}


def convert(node: dict, definitions: dict, seen: tuple[str, ...] = ()) -> dict:
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in SPECIAL:
            return dict(SPECIAL[name])
        if name in seen:
            raise ValueError(f"recursive type {' -> '.join((*seen, name))}: no structural form")
        return _with_added(name, convert(definitions[name], definitions, (*seen, name)))
    out: dict = {}
    for key, value in node.items():
        if key in DROPPED:
            continue
        if key == "properties":
            out[key] = {name: convert(sub, definitions, seen) for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = convert(value, definitions, seen)
        else:
            out[key] = value
    if "properties" in out:
        out.setdefault("type", "object")
    elif out.get("type") == "object" and "additionalProperties" not in out:
        out["x-kubernetes-preserve-unknown-fields"] = True  # a free-form object: kept as given
    return out


def _with_added(name: str, schema: dict) -> dict:
    added = ADDED.get(name)
    if added is None:
        return schema
    required = sorted({*schema.get("required", ()), *added.get("required", ())})
    if required:  # never `required: []`: the API server drops it (omitempty), so server-side apply would conflict
        schema["required"] = required
    for prop, extra in added.get("properties", {}).items():
        schema["properties"][prop] = {**schema["properties"][prop], **extra}
    return schema


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        sys.exit(__doc__)
    swagger = json.loads(Path(argv[0]).read_text())
    schema = convert({"$ref": f"#/definitions/{CORE}PodTemplateSpec"}, swagger["definitions"])
    TARGET.write_text(json.dumps(schema, sort_keys=True, separators=(",", ":")) + "\n")
    print(TARGET)


if __name__ == "__main__":
    main(sys.argv[1:])
