"""The printer columns' JSONPath, as kube-apiserver evaluates it (client-go's util/jsonpath, wrapped in `{}` with
missing keys allowed; apiextensions-apiserver's tableconvertor takes the first value of the first result): filters,
their Go comparisons and errors, the parser's quirks, and what a string column prints. The expected values are
client-go's (its jsonpath_test.go where it has the case), not what a JSONPath elsewhere would give."""

from __future__ import annotations

import pytest
import yaml

from localcluster.endpoints import jsonpath
from localcluster.endpoints.table import date_cell, human_duration

from .jobs import genericjob

JOB = {
    "metadata": {"name": "ab", "annotations": {"a.b/c": "x"}},
    "spec": {"n": [1, 2, 3.5], "whole": 2.0, "m": [{"x": 1}, {"x": 2, "z": None}]},
    "status": {"conditions": [
        {"type": "Initialized", "status": "True", "reason": "PodsCreated", "message": "Pods created."},
        {"type": "Completed", "status": "False", "reason": "ReplicaFailed", "message": "why"},
        {"type": "Failed", "status": "True", "reason": "ReplicaFailed", "message": "why"},
    ]},
}


def cell(path: str, obj=JOB):
    """The column's value as the tableconvertor takes it: the first of the first result, None for none or an
    error."""
    try:
        results = jsonpath.find_results(jsonpath.parse("{" + path + "}"), obj)
    except jsonpath.Failed:
        return None
    return results[0][0] if results and results[0] else None


def execute(template: str, data) -> str:
    """client-go's Execute (kubectl -o jsonpath): every result printed, a list's values joined by spaces."""
    out = []
    for results in jsonpath.find_results(jsonpath.parse(template), data):
        out.append(" ".join("null" if v is None else jsonpath.print_result(v) for v in results))
    return "".join(out)


def test_a_filter_selects_a_condition_by_type():
    assert cell('.status.conditions[?(@.type=="Failed")].message') == "why"
    assert cell(".status.conditions[?(@.type=='Failed')].reason") == "ReplicaFailed"  # single quotes too
    assert cell('.status.conditions[?(@.type == "Failed")].status') == "True"  # spaces around the operator
    assert cell('.status.conditions[?(@.type=="Ready")].message') is None  # no such condition: an empty cell
    assert cell('.status.conditions[?(@.type=="Failed")].missing') is None
    assert cell('.status.missing[?(@.type=="Failed")].message') is None  # nothing to filter is no error
    assert cell('.status.conditions[?(@.type!="Initialized")].type') == "Completed"  # the first match wins
    assert cell('.status.conditions[?(@.status=="True")].type') == "Initialized"
    assert cell('.status.conditions[?(@.type=="Failed")]') == JOB["status"]["conditions"][2]


def test_a_filter_is_one_comparison_of_values_of_one_kind():
    assert cell(".spec.m[?(@.x==2)].x") == 2 and cell(".spec.m[?(@.x>=2)].x") == 2
    assert cell(".spec.m[?(@.x<2)].x") == 1 and cell(".spec.m[?(@.x!=1)].x") == 2
    assert cell(".spec.m[?(@.z)].x") == 2  # exists: present, even null
    assert cell(".spec.m[?(@.x==1.0)].x") is None  # an integer and a float do not compare: an error, not a miss
    assert cell(".spec.n[?(@==1)]") is None  # 1 matches, then 3.5 does not compare: the whole column fails
    assert cell(".spec.m[?(@.x=='1')]") is None and cell(".spec.m[?(@.x<true)]") is None
    assert cell(".spec.m[?(@.x=1)]") is None  # `=` parses, and fails once a value is compared
    assert cell('.status.conditions[?(@.type=="Failed")][?(@.status=="True")].message') is None  # a map: no
    assert cell('.metadata[?(@.name=="ab")]') is None  # a map is not filtered
    assert execute("{[?(@<5)]}", [2, 6, 3, 7]) == "2 3"
    points = [{"id": "i1", "x": 4}, {"id": "i2", "x": -2, "z": 1}, {"id": "i5", "x": 0, "z": 1},
              {"id": "i7", "x": None}]
    assert execute("{[?(@.z)].id}", points) == "i2 i5"
    assert execute("{[-1]['x']}", points) == "null"


def test_a_whole_float_is_an_integer_as_the_server_holds_it():
    """kube-apiserver decodes what it stored: `2.0`, written back as `2`, is the integer 2."""
    assert jsonpath.print_result(cell(".spec.whole")) == "2"
    whole = {"spec": {"m": [{"x": 2.0}]}}
    assert cell(".spec.m[?(@.x==2)].x", whole) == 2 and cell(".spec.m[?(@.x==2.0)].x", whole) is None


def test_paths_as_client_go_reads_them():
    assert cell(".metadata.annotations['a.b/c']") is None  # read as the fields `a` and `b/c`
    assert cell(".metadata.annotations.a\\.b/c") == "x"  # the escaped dot is the way
    assert [cell(p) for p in (".spec.n[-1]", ".spec.n[]", ".spec.n[1:]", ".spec.n[::2]", ".spec.n[2,0]")] == [
        3.5, 1, 2, 1, 3.5]
    assert cell(".spec.n[5]") is None and cell(".spec.n[2:1]") is None and cell(".metadata.name[0]") is None
    assert cell(".metadata.name.*") == 97  # a string's bytes
    assert cell("..name") == "ab" and cell("...name") == "ab"
    assert execute("{range .spec.m[*]}{.x}-{end}", JOB) == "1-2-"
    assert execute("hello {.metadata.name}", JOB) == "hello ab" and execute('{"{"}', None) == "{"
    assert cell("status.phase") is None  # an identifier: an error (the CRD's validation asks for a leading dot)


@pytest.mark.parametrize("path", [".a[", '.a[?(@.b=="c"', ".a[x]", ".a[-]", ".a[1:2:3:4]", ".a[?(@.b==)]",
                                  ".a[?(@.b)", "..a......b", ".a{", '.a["b]', ".%{",
                                  '.c[?(@.type=="Failed" && @.status=="True")]'])  # no `&&`
def test_what_client_go_does_not_parse(path):
    with pytest.raises(jsonpath.JSONPathError):
        jsonpath.parse("{" + path + "}")


def test_quoted_strings_unquote_as_go_does():
    [(_, nodes)] = jsonpath.parse(r"""{.a[?(@.x=="a\"b\u00e9\x41\101")]}""")
    assert nodes[1][2] == ("list", [("text", 'a"bé' + "AA")])
    with pytest.raises(jsonpath.JSONPathError):
        jsonpath.parse(r'{.a[?(@.x=="\q")]}')


def test_a_string_column_prints_as_print_results():
    assert jsonpath.print_result({"b": [1, "<a>&"], "a": None, "c": 1.0}) == (
        '{"a":null,"b":[1,"\\u003ca\\u003e\\u0026"],"c":1}')
    assert jsonpath.print_result(None) == "<no value>"
    assert [jsonpath.print_result(v) for v in (True, 3, 3.0, 1.5, 1234567.5, 0.00001, 2**64, "s")] == [
        "true", "3", "3", "1.5", "1.2345675e+06", "1e-05", "1.8446744073709552e+19", "s"]
    assert jsonpath.go_json([1e-7, 0.00001, 1e21, 123456789.5]) == "[1e-7,0.00001,1e+21,123456789.5]"


def test_date_cells():
    assert date_cell("") == "<unknown>" and date_cell("null") == "<unknown>"
    assert date_cell("0001-01-01T00:00:00Z") == "<unknown>"
    assert date_cell("yesterday") == "<invalid>" and date_cell("2026-02-30T00:00:00Z") == "<invalid>"
    assert date_cell("2000-01-01T02:00:00+02:00") == date_cell("2000-01-01T00:00:00.5Z") != "<invalid>"
    assert human_duration(119) == "119s"


COLUMNS = [
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
    {"name": "Message", "type": "string", "priority": 1, "jsonPath": '.status.conditions[?(@.type=="Failed")].message'},
    {"name": "Workers", "type": "integer", "jsonPath": '.spec.replicaSpecs[?(@.type=="worker")].replicas'},
    {"name": "Spec", "type": "string", "jsonPath": ".spec.replicaSpecs[0]"},
    {"name": "Odd", "type": "string", "jsonPath": ".status.conditions[?(@.status=1)].message"},
    {"name": "Broken", "type": "string", "jsonPath": ".status.conditions[?(@.type=="},  # and every column after it
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


async def test_a_crd_table_evaluates_filters_as_kube_apiserver(cluster, custom, tmp_path):
    group, plural = "example.dev", "trials"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"{plural}.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": plural, "singular": "trial", "kind": "Trial", "listKind": "TrialList"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                                  "additionalPrinterColumns": COLUMNS,
                                  "schema": {"openAPIV3Schema": {"type": "object",
                                                                 "x-kubernetes-preserve-unknown-fields": True}}}]}}
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(crd))
    cluster.apply_crds(tmp_path)
    for name in ("failed", "fresh"):
        trial = {**genericjob(name, 2), "apiVersion": f"{group}/v1", "kind": "Trial"}
        await custom.create_namespaced_custom_object(group, "v1", "default", plural, trial)
    why = "replica worker-0 failed"
    status = {"phase": "Failed", "conditions": [
        {"type": "Completed", "status": "False", "reason": "ReplicaFailed", "message": why},
        {"type": "Failed", "status": "True", "reason": "ReplicaFailed", "message": why}]}
    await custom.patch_namespaced_custom_object_status(group, "v1", "default", plural, "failed", {"status": status},
                                                       _content_type="application/merge-patch+json")
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    async with cluster.session(base_url=True) as http:
        async with http.get(f"/apis/{group}/v1/namespaces/default/{plural}", headers={"Accept": accept}) as resp:
            table = await resp.json()
    definitions = table["columnDefinitions"]
    assert [(c["name"], c["priority"]) for c in definitions] == [
        ("Name", 0), ("Phase", 0), ("Message", 1), ("Workers", 0), ("Spec", 0), ("Odd", 0)]
    assert definitions[2]["description"] == ("Custom resource definition column (in JSONPath format): "
                                              '.status.conditions[?(@.type=="Failed")].message')
    rows = {row["cells"][0]: row["cells"][1:] for row in table["rows"]}
    spec = '{"replicas":2,"type":"worker"}'  # json.Marshal: keys sorted
    assert rows["failed"] == ["Failed", why, 2, spec, None]
    assert rows["fresh"] == [None, None, 2, spec, None]
