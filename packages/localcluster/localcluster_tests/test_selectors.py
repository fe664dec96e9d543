import pytest

from apimachinery.selectors import Requirement, SelectorError, parse_label_selector
from localcluster.validation.selectors import FieldRequirement, label_selector_from_dict, parse_field_selector

# --- label selector grammar ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("   ", []),
        ("a=b", [("a", "=", ("b",))]),
        ("a==b", [("a", "==", ("b",))]),
        ("a!=b", [("a", "!=", ("b",))]),
        ("a", [("a", "exists", ())]),
        ("!a", [("a", "!", ())]),
        (" ! a ", [("a", "!", ())]),
        ("a in (y,x)", [("a", "in", ("x", "y"))]),
        ("a notin (x)", [("a", "notin", ("x",))]),
        ("a in (x,x)", [("a", "in", ("x",))]),
        ("a in ()", [("a", "in", ("",))]),
        ("a in (x,,y)", [("a", "in", ("", "x", "y"))]),
        ("a in (,x)", [("a", "in", ("", "x"))]),
        ("a in (x,)", [("a", "in", ("", "x"))]),
        ("a=", [("a", "=", ("",))]),
        ("a=,b", [("a", "=", ("",)), ("b", "exists", ())]),
        ("a>1", [("a", "gt", ("1",))]),
        ("a<10", [("a", "lt", ("10",))]),
        # "in" and "notin" are plain words where a key or value is expected.
        ("in in (in,notin)", [("in", "in", ("in", "notin"))]),
        ("notin=in", [("notin", "=", ("in",))]),
        # Requirements are sorted by key, as labels.Parse does.
        ("z=1,a=2", [("a", "=", ("2",)), ("z", "=", ("1",))]),
        ("\tx = y ,\n !w , v notin ( a , b ) ", [("v", "notin", ("a", "b")), ("w", "!", ()), ("x", "=", ("y",))]),
        ("example.com/app=web", [("example.com/app", "=", ("web",))]),
        ("a=A-b_c.9", [("a", "=", ("A-b_c.9",))]),
    ],
)
def test_parse_label_selector_valid(text, expected):
    selector = parse_label_selector(text)
    assert selector.requirements == tuple(Requirement(k, op, values) for k, op, values in expected)
    assert selector.empty == (not expected)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (",", "found ',', expected: !, identifier, or 'end of string'"),
        ("a=b,", "found '', expected: identifier after ','"),
        ("a=b,,c", "found ',', expected: identifier after ','"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a=b=c", "found '=', expected: ',' or 'end of string'"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        ("a in b", "unable to parse requirement: found 'b' expected: '('"),
        ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
        ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
        ("a in (b,=)", "unable to parse requirement: found '=', expected: ',', or identifier"),
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a=(", "unable to parse requirement: found '(', expected: identifier"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("!!a", "unable to parse requirement: found '!', expected: identifier"),
        ("=b", "found '=', expected: !, identifier, or 'end of string'"),
        ("(a)", "found '(', expected: !, identifier, or 'end of string'"),
        ("a>b", "the value must be an integer"),
        ("a<1.5", "the value must be an integer"),
        # Key validation (validation.IsQualifiedName).
        ("-a=b", 'key: Invalid value: "-a"'),
        ("a/b/c=d", "a qualified name must consist of"),
        ("/a=b", "prefix part must be non-empty"),
        ("Example.com/a=b", "prefix part a lowercase RFC 1123 subdomain"),
        ("example.com/=b", "name part must be non-empty"),
        ("a" * 64 + "=b", "name part must be no more than 63 characters"),
        # Value validation (validation.IsValidLabelValue).
        ("a=" + "b" * 64, "must be no more than 63 characters"),
        ("a=-b", 'values[0][a]: Invalid value: "-b": a valid label must be an empty string'),
        ("a in (ok,b@d)", 'Invalid value: "b@d"'),
        ("a!=b.", 'Invalid value: "b."'),
    ],
)
def test_parse_label_selector_invalid(text, message):
    with pytest.raises(SelectorError) as excinfo:
        parse_label_selector(text)
    assert message in str(excinfo.value)
    assert isinstance(excinfo.value, ValueError)


def test_label_value_of_63_characters_is_valid():
    assert parse_label_selector("a=" + "b" * 63).matches({"a": "b" * 63})


LABELS = {"app": "web", "tier": "front", "version": "7"}


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("", LABELS, True),
        ("", None, True),
        ("app=web", LABELS, True),
        ("app==web", LABELS, True),
        ("app=db", LABELS, False),
        ("missing=web", LABELS, False),
        # != and notin also match objects that lack the label.
        ("app!=db", LABELS, True),
        ("app!=web", LABELS, False),
        ("missing!=x", LABELS, True),
        ("missing!=x", None, True),
        ("app in (web,db)", LABELS, True),
        ("app in (db)", LABELS, False),
        ("missing in (web)", LABELS, False),
        ("app notin (db)", LABELS, True),
        ("app notin (web,db)", LABELS, False),
        ("missing notin (web)", LABELS, True),
        ("app", LABELS, True),
        ("missing", LABELS, False),
        ("!missing", LABELS, True),
        ("!app", LABELS, False),
        ("!app", None, True),
        # "a=" wants the label present with an empty value.
        ("app=", {"app": ""}, True),
        ("app=", {}, False),
        ("app in ()", {"app": ""}, True),
        ("version>6", LABELS, True),
        ("version>7", LABELS, False),
        ("version<8", LABELS, True),
        ("missing>1", LABELS, False),
        ("app>1", LABELS, False),  # a non-integer label never compares
        # All requirements must hold.
        ("app=web,tier=front,!canary", LABELS, True),
        ("app=web,tier=back", LABELS, False),
        ("app in (web),tier notin (back),version", LABELS, True),
    ],
)
def test_label_selector_matches(text, labels, expected):
    assert parse_label_selector(text).matches(labels) is expected


# --- structured selectors (metav1.LabelSelector) ------------------------------------------


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ({}, LABELS, True),
        ({"matchLabels": {}, "matchExpressions": []}, {}, True),
        ({"matchLabels": {"app": "web"}}, LABELS, True),
        ({"matchLabels": {"app": "web", "tier": "back"}}, LABELS, False),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]}, LABELS, True),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}, LABELS, False),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]}, LABELS, True),
        ({"matchExpressions": [{"key": "nope", "operator": "NotIn", "values": ["db"]}]}, LABELS, True),
        ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, LABELS, True),
        ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, LABELS, False),
        ({"matchExpressions": [{"key": "nope", "operator": "DoesNotExist", "values": []}]}, None, True),
        (
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}],
            },
            LABELS,
            True,
        ),
    ],
)
def test_label_selector_from_dict_matches(selector, labels, expected):
    assert label_selector_from_dict(selector).matches(labels) is expected


def test_null_structured_selector_selects_nothing():
    selector = label_selector_from_dict(None)
    assert not selector.matches(LABELS)
    assert not selector.matches({})
    assert not selector.empty


def test_structured_selector_requirements_are_exposed():
    selector = label_selector_from_dict(
        {"matchLabels": {"b": "1"}, "matchExpressions": [{"key": "a", "operator": "Exists"}]}
    )
    assert selector.requirements == (Requirement("a", "exists"), Requirement("b", "=", ("1",)))


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ([], "must be an object"),
        ({"matchLabels": ["a"]}, "matchLabels must be an object"),
        ({"matchLabels": {"a": 1}}, "must be strings"),
        ({"matchLabels": {"bad key": "x"}}, 'key: Invalid value: "bad key"'),
        ({"matchLabels": {"a": "bad value"}}, 'Invalid value: "bad value"'),
        ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}, '"Gt" is not a valid'),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}, "values set can't be empty"),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn"}]}, "values set can't be empty"),
        ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}, "values set must be empty"),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": "x"}]}, "values must be a list"),
        ({"matchExpressions": ["a"]}, "item must be an object"),
        ({"matchExpressions": [{"operator": "Exists"}]}, "must be strings"),
    ],
)
def test_label_selector_from_dict_invalid(selector, message):
    with pytest.raises(SelectorError, match=message):
        label_selector_from_dict(selector)


# --- field selectors ----------------------------------------------------------------------

POD = {
    "metadata": {"name": "web-1", "namespace": "default"},
    "spec": {"nodeName": "node-a", "hostNetwork": True, "priority": 5},
    "status": {"phase": "Running"},
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("metadata.name=web-1", [("metadata.name", "=", "web-1")]),
        ("metadata.name==web-1", [("metadata.name", "=", "web-1")]),
        ("status.phase!=Running", [("status.phase", "!=", "Running")]),
        ("spec.nodeName=", [("spec.nodeName", "=", "")]),
        ("a=1,b!=2", [("a", "=", "1"), ("b", "!=", "2")]),
        ("a=1,,b=2", [("a", "=", "1"), ("b", "=", "2")]),
        # Escapes are only for values.
        (r"a=x\,y\=z\\", [("a", "=", "x,y=z\\")]),
        (r"a=x\,y,b=2", [("a", "=", "x,y"), ("b", "=", "2")]),
        # Nothing is trimmed, like fields.ParseSelector.
        (" a = b", [(" a ", "=", " b")]),
    ],
)
def test_parse_field_selector_valid(text, expected):
    selector = parse_field_selector(text)
    assert selector.requirements == tuple(FieldRequirement(*r) for r in expected)
    assert selector.fields == tuple(dict.fromkeys(r[0] for r in expected))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
        ("a=1,b", "can't understand 'b'"),
        ("a=b=c", "unescaped character in value: ="),
        # The first operator splits, leaving "=b" as the value.
        ("a!==b", "unescaped character in value: ="),
        (r"a=b\n", r"invalid escape sequence: \n"),
        ("a=b\\", "invalid escape sequence: \\"),
    ],
)
def test_parse_field_selector_invalid(text, message):
    with pytest.raises(SelectorError) as excinfo:
        parse_field_selector(text)
    assert message in str(excinfo.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", True),
        ("metadata.name=web-1", True),
        ("metadata.name=web-2", False),
        ("metadata.name!=web-2", True),
        ("metadata.namespace=default,status.phase=Running", True),
        ("metadata.namespace=default,status.phase!=Running", False),
        ("spec.nodeName=node-a", True),
        # A missing field reads as the empty string.
        ("spec.schedulerName=", True),
        ("spec.schedulerName!=", False),
        ("status.podIP=10.0.0.1", False),
        ("metadata.name.deeper=", True),
        # Non-string scalars are compared in their string form.
        ("spec.hostNetwork=true", True),
        ("spec.priority=5", True),
        # An object is not a field value.
        ("spec=", True),
    ],
)
def test_field_selector_matches(text, expected):
    assert parse_field_selector(text).matches(POD) is expected


def test_field_selector_exposes_fields_and_exact_values():
    selector = parse_field_selector("metadata.name=web-1,status.phase!=Failed,metadata.name==x")
    assert selector.fields == ("metadata.name", "status.phase")
    assert selector.exact_value("metadata.name") == "web-1"
    assert selector.exact_value("status.phase") is None
    assert selector.exact_value("spec.nodeName") is None
    assert not selector.empty
    assert parse_field_selector("").empty
