"""The CEL cost estimator (localcluster/validation/cel_cost.py) against what real servers answered.

The data points: the GenericJob CRD of commit dabcc66 (tests/data/genericjob-dabcc66.yaml.gz, as
shipped) was refused by a v1.24 server, "exceeds budget by factor of 12.9x", because of the Service
ports rule comparing `protocol` strings; with `maxLength: 4` on `protocol` the same server accepted it,
and a v1.35 server accepted it as it was (from 1.29 an enum bounds a string's length).
"""

from __future__ import annotations

import copy
import gzip
from pathlib import Path

import pytest
import yaml

from localcluster.validation import crd_cel
from localcluster.validation.cel_ast import parse
from localcluster.validation.cel_cost import K8S_1_24, K8S_1_28, K8S_1_35, U64, WORST, estimate
from localcluster.validation.cel_types import MAX_REQUEST_SIZE, Checker, decl_type

pytestmark = pytest.mark.slow  # runs long: prices the CRDs' CEL rules at several versions (25-28 s, -n 4, loaded)

OLD_GENERICJOB = Path(__file__).parents[3] / "tests" / "data" / "genericjob-dabcc66.yaml.gz"
SCHEMA = "spec.validation.openAPIV3Schema"
PORTS = f"{SCHEMA}.properties[spec].properties[service].properties[ports]"
TOTAL_12_9 = (f"{SCHEMA}: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema "
              "exceeds budget by factor of 12.9x (try simplifying the rule, or adding maxItems, maxProperties, and "
              "maxLength where arrays, maps, and strings are declared)")


def old_genericjob() -> dict:
    return yaml.safe_load(gzip.decompress(OLD_GENERICJOB.read_bytes()))


def messages(crd: dict, estimator) -> list[str]:
    return [text for _, _, text in crd_cel.errors(crd, estimator, minimum=None)]


def test_the_old_genericjob_crd_exceeds_a_1_24_servers_budget_by_12_9x():
    errors = messages(old_genericjob(), K8S_1_24)
    assert errors[-1] == TOTAL_12_9
    assert f"{PORTS}.x-kubernetes-validations[2].rule: Forbidden: estimated rule cost exceeds budget by factor of " \
           "more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, " \
           "maps, and strings are declared)" in errors
    assert (f"{PORTS}.x-kubernetes-validations[2].rule: Forbidden: contributed to estimated rule cost total exceeding "
            "cost limit for entire OpenAPIv3 schema") in errors
    costs = {c.path: c.cost for _, found in crd_cel.rule_costs(old_genericjob(), K8S_1_24, None) for c in found}
    assert max(costs, key=costs.get) == f"{PORTS}.x-kubernetes-validations[2].rule"  # the protocol comparison


def test_max_length_on_protocol_is_what_a_1_24_server_needed():
    crd = old_genericjob()
    ports = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["service"][
        "properties"]["ports"]
    ports["items"]["properties"]["protocol"]["maxLength"] = 4
    assert messages(crd, K8S_1_24) == []


def test_a_1_35_server_bounds_an_enum_string_by_its_longest_value():
    assert messages(old_genericjob(), K8S_1_35) == []
    assert messages(old_genericjob(), K8S_1_28)[-1] == TOTAL_12_9  # 1.28 still priced it as a 3 MiB string


def cost(rule: str, schema: dict, estimator=WORST) -> int:
    self_type = decl_type(schema, rules=estimator.size_rules)
    checker = Checker({"self": self_type, "oldSelf": self_type})
    expr = parse(rule)
    checker.check(expr)
    return estimate(expr, checker, self_type, estimator).hi


INTS = {"type": "array", "maxItems": 10, "items": {"type": "object", "properties": {"n": {"type": "integer"}}}}


def test_a_macros_result_has_no_size_before_1_31():
    """`self.map(...).sum()`: cel-go before 0.20 knows no size for a comprehension's result, so the
    lists library prices the sum at 2^64-1; from 1.31 the result is as long as the list."""
    rule = "self.map(x, x.n).sum() < 5"
    assert cost(rule, INTS, K8S_1_28) == U64
    assert cost(rule, INTS, K8S_1_35) < 1000
    assert cost("self.sum() < 5", {"type": "array", "maxItems": 10, "items": {"type": "integer"}}, K8S_1_28) < 100


@pytest.mark.parametrize(("rule", "schema", "expected"), [
    # `self` costs 1. contains: the string's size x 0.1 (rounded up) times the substring's
    # (a string of unknown length is 3 MiB less its quotes).
    ("self.contains('a')", {"type": "string"}, 1 + 314_573 * 1),
    ("self.contains('a')", {"type": "string", "maxLength": 10}, 1 + 4 * 1),  # maxLength counts 4 bytes a character
    # matches: (size + 1) x 0.1 times the regex's length x 0.25: (100 + 1) x 0.1 -> 11, 8 x 0.25 -> 2
    ("self.matches('^[a-z]+$')", {"type": "string", "maxLength": 25}, 1 + 11 * 2),
    # all over 10 items: per item the loop condition (2) and `@result && inner` (1 + inner); exists_one
    # over 10 items: per item `y.n == x.n ? @result + 1 : @result` (4 + 2), then `@result == 1` (2).
    ("self.all(x, self.exists_one(y, y.n == x.n))", INTS, 1 + 1 + 10 * (2 + 1 + (1 + 2 + 10 * 6))),
    # the strings library prices split by its target: 40 x 0.2; size() and < cost 1 each
    ("self.split(',').size() < 3", {"type": "string", "maxLength": 10}, 1 + 8 + 1 + 1),
])
def test_costs_of_single_rules(rule, schema, expected):
    assert cost(rule, schema) == expected


def test_unbounded_lists_are_sized_by_what_fits_in_a_request():
    strings = decl_type({"type": "array", "items": {"type": "string"}})
    assert strings.max_elements == (MAX_REQUEST_SIZE - 2) // (2 + 1)


@pytest.mark.parametrize(("cost_value", "shown"), [(104_000_000, "1.040000x"), (1_290_000_000, "12.9x"),
                                                   (10_100_000_000, "more than 100x")])
def test_the_factor_is_printed_as_go_prints_it(cost_value, shown):
    assert f"by factor of {shown} " in crd_cel.exceeds_message("x", cost_value, 100_000_000)


def widget_crd(rule: dict, spec: dict | None = None) -> dict:
    schema = {"type": "object", "properties": {"spec": spec or {
        "type": "object", "properties": {"size": {"type": "integer"}, "name": {"type": "string", "maxLength": 8}},
        "x-kubernetes-validations": [rule]}}}
    return {"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": schema}}]}}


def test_a_rule_that_does_not_compile_is_refused_with_cel_gos_message():
    [(reason, path, text)] = crd_cel.errors(widget_crd({"rule": "self.sise > 1"}))
    assert (reason, path) == ("FieldValueInvalid", f"{SCHEMA}.properties[spec].x-kubernetes-validations[0].rule")
    assert text == (f'{path}: Invalid value: apiextensions.ValidationRule{{Rule:"self.sise > 1", Message:"", '
                    'MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", '
                    "OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:5: undefined field 'sise'\n"
                    " | self.sise > 1\n | ....^")
    [(_, _, text)] = crd_cel.errors(widget_crd({"rule": "self.size + 1"}))
    assert text.endswith(": cel expression must evaluate to a bool")


def test_functions_newer_than_the_minimum_version_do_not_compile():
    """quantity() is in the environment of 1.28, so new CRDs may call it from 1.29; isIP() from 1.31."""
    for rule, column in (("quantity(self.name).isInteger()", 9), ("isIP(self.name)", 5)):
        [(_, _, text)] = crd_cel.errors(widget_crd({"rule": rule}))
        name = rule.split("(")[0]
        assert f"compilation failed: ERROR: <input>:1:{column}: undeclared reference to '{name}' (in container '')" \
            in text
        assert crd_cel.errors(widget_crd({"rule": rule}), minimum=(1, 31)) == []


def test_rule_fields_newer_than_the_minimum_version_are_refused():
    rule = {"rule": "self.size > 1", "optionalOldSelf": True}
    [(reason, path, text)] = crd_cel.errors(widget_crd(rule))
    assert path.endswith("x-kubernetes-validations[0].optionalOldSelf") and reason == "FieldValueForbidden"
    assert "not supported before Kubernetes 1.30" in text
    assert crd_cel.errors(widget_crd({"rule": "self.size > 1", "fieldPath": ".size", "reason": "FieldValueInvalid",
                                      "messageExpression": "'too small'"})) == []


def test_a_rule_under_an_unbounded_list_runs_once_per_item_that_fits():
    items = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}},
             "x-kubernetes-validations": [{"rule": "self.name.startsWith('a')"}]}
    crd = widget_crd({}, {"type": "array", "items": items})
    [(_, [rule])] = crd_cel.rule_costs(crd)
    assert rule.cardinality == MAX_REQUEST_SIZE // (2 + 1)  # an item of no required field is at least {}
    bounded = copy.deepcopy(crd)
    bounded["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["maxItems"] = 5
    [(_, [rule])] = crd_cel.rule_costs(bounded)
    assert rule.cardinality == 5


def test_type_names_and_int_or_string_values_compile():
    rule = {"rule": "type(self.port) == string ? self.port.matches('^[a-z]+$') : self.port > 0"}
    spec = {"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": True}},
            "x-kubernetes-validations": [rule]}
    [(_, [found])] = crd_cel.rule_costs(widget_crd({}, spec))
    assert found.error == ""


def test_a_message_expression_is_compiled_and_priced_once():
    bad = crd_cel.errors(widget_crd({"rule": "self.size > 1", "messageExpression": "self.size"}))
    assert [(reason, path.rsplit(".", 1)[-1]) for reason, path, _ in bad] == [("FieldValueInvalid",
                                                                             "messageExpression")]
    assert bad[0][2].endswith(": messageExpression must evaluate to a string")
    items = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}},
             "x-kubernetes-validations": [{"rule": "self.name != ''", "messageExpression": "self.name + ' is bad'"}]}
    [(_, [rule, message])] = crd_cel.rule_costs(widget_crd({}, {"type": "array", "maxItems": 100, "items": items}))
    assert (rule.cardinality, message.cardinality, message.kind) == (100, 1, "messageExpression")
    assert message.cost == 2 + 4  # self.name (2), then the concatenation's 32 + 7 characters x 0.1 (4)


def test_a_rule_without_a_rule_is_required():
    [(reason, path, text)] = crd_cel.errors(widget_crd({"rule": " ", "message": "m"}))
    assert (reason, text) == ("FieldValueRequired", f"{path}: Required value: rule is not specified")
