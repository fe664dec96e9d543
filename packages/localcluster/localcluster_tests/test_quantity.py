"""resource.Quantity as a real API server parses and writes it back.

The tables are facts from k8s.io/apimachinery v0.35.7, pkg/api/resource/quantity_test.go (the test
function each comes from is named above it); the code under test (localcluster/validation/quantity.py) is ours.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import orjson
import pytest

from localcluster.validation.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    FORMAT_ERROR,
    SUFFIX_ERROR,
    QuantityError,
    canonical,
    go_float,
    parse,
)

from .jobs import genericjob
from .test_protobuf import body as pb_body
from .test_protobuf import post

D, B, X = DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT

# TestQuantityParse: input -> (mantissa, exponent, format): the value mantissa * 10^exponent.
PARSED = [
    ("0", 0, 0, D), ("0n", 0, 0, D), ("0u", 0, 0, D), ("0m", 0, 0, D), ("0Ki", 0, 0, B), ("0k", 0, 0, D),
    ("0Mi", 0, 0, B), ("0M", 0, 0, D), ("0Gi", 0, 0, B), ("0G", 0, 0, D), ("0Ti", 0, 0, B), ("0T", 0, 0, D),
    ("1", 1, 0, D),
    ("1Ki", 1024, 0, B), ("8Ki", 8 * 1024, 0, B), ("7Mi", 7 * 1024**2, 0, B), ("6Gi", 6 * 1024**3, 0, B),
    ("5Ti", 5 * 1024**4, 0, B), ("4Pi", 4 * 1024**5, 0, B), ("3Ei", 3 * 1024**6, 0, B),
    ("10Ti", 10 * 1024**4, 0, B), ("100Ti", 100 * 1024**4, 0, B),
    ("5n", 5, -9, D), ("4u", 4, -6, D), ("3m", 3, -3, D), ("9", 9, 0, D), ("8k", 8, 3, D), ("50k", 5, 4, D),
    ("7M", 7, 6, D), ("6G", 6, 9, D), ("5T", 5, 12, D), ("40T", 4, 13, D), ("300T", 3, 14, D), ("2P", 2, 15, D),
    ("1E", 1, 18, D),
    ("1E-3", 1, -3, X), ("1e3", 1, 3, X), ("1E6", 1, 6, X), ("1e9", 1, 9, X), ("1E12", 1, 12, X),
    ("1e15", 1, 15, X), ("1E18", 1, 18, X),
    ("1e14", 1, 14, X), ("1e13", 1, 13, X), ("100.035k", 100035, 0, D),
    ("0.001", 1, -3, D), ("0.0005k", 5, -1, D), ("0.005", 5, -3, D), ("0.05", 5, -2, D), ("0.5", 5, -1, D),
    ("0.00050k", 5, -1, D), ("0.00500", 5, -3, D), ("0.05000", 5, -2, D), ("0.50000", 5, -1, D),
    ("0.5e0", 5, -1, X), ("0.5e-1", 5, -2, X), ("0.5e-2", 5, -3, X), ("10.035M", 10035, 3, D),
    ("1.2e3", 12, 2, X), ("1.3E+6", 13, 5, X), ("1.40e9", 14, 8, X), ("1.53E12", 153, 10, X),
    ("1.6e15", 16, 14, X), ("1.7E18", 17, 17, X),
    ("9.01", 901, -2, D), ("8.1k", 81, 2, D), ("7.123456M", 7123456, 0, D), ("6.987654321G", 6987654321, 0, D),
    ("5.444T", 5444, 9, D), ("40.1T", 401, 11, D), ("300.2T", 3002, 11, D), ("2.5P", 25, 14, D),
    ("1.01E", 101, 16, D),
    # Things that saturate/round
    ("3.001n", 4, -9, D), ("1.1E-9", 2, -9, X), ("0.0000000001", 1, -9, D), ("0.0000000005", 1, -9, D),
    ("0.00000000050", 1, -9, D), ("0.5e-9", 1, -9, X), ("0.9n", 1, -9, D), ("0.00000012345", 124, -9, D),
    ("0.00000012354", 124, -9, D), ("9Ei", 2**63 - 1, 0, B), ("9223372036854775807Ki", 2**63 - 1, 0, B),
    ("12E", 12, 18, D),
    # We'll accept fractional binary stuff, too.
    ("100.035Ki", 10243584, -2, B), ("0.5Mi", 512 * 1024, 0, B), ("0.05Gi", 536870912, -1, B),
    ("0.025Ti", 274877906944, -1, B),
    # Things written by trolls
    ("0.000000000001Ki", 2, -9, D), (".001", 1, -3, D), (".0001k", 100, -3, D), ("1.", 1, 0, D),
    ("1.G", 1, 9, D),
]


@pytest.mark.parametrize(("text", "mantissa", "exponent", "fmt"), PARSED)
@pytest.mark.parametrize("sign", ["", "-", "+"])
def test_parse_value_and_format(text, mantissa, exponent, fmt, sign):
    q = parse(sign + text)
    assert Decimal(q.unscaled).scaleb(-q.scale) == Decimal(-mantissa if sign == "-" else mantissa).scaleb(exponent)
    assert q.format == fmt or mantissa == 0  # Go's test compares the format of zero by value only


# TestQuantityParse's invalid inputs (trailing whitespace is forbidden: UnmarshalJSON trims, ParseQuantity not).
@pytest.mark.parametrize("text", ["", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-",
                                  " 1", "1 "])
def test_parse_refuses(text):
    with pytest.raises(QuantityError):
        parse(text)


# TestQuantityString: (mantissa, exponent, format) -> canonical string, and an alternate spelling of it.
STRINGS = [
    (1024**3, 0, B, "1Gi", "1024Mi"), (300 * 1024**2, 0, B, "300Mi", "307200Ki"), (6 * 1024, 0, B, "6Ki", ""),
    (1001 * 1024**3, 0, B, "1001Gi", "1025024Mi"), (1024**4, 0, B, "1Ti", "1024Gi"), (5, 0, B, "5", "5000m"),
    (500, -3, B, "500m", "0.5"), (1, 9, D, "1G", "1000M"), (1000, 6, D, "1G", "0.001T"), (1000000, 3, D, "1G", ""),
    (1000000000, 0, D, "1G", ""), (1, -3, D, "1m", "1000u"), (80, -3, D, "80m", ""), (1080, -3, D, "1080m", "1.08"),
    (108, -2, D, "1080m", "1080000000n"), (10800, -4, D, "1080m", ""), (300, 6, D, "300M", ""), (1, 12, D, "1T", ""),
    (1234567, 6, D, "1234567M", ""), (1234567, -3, B, "1234567m", ""), (3, 3, D, "3k", ""), (1025, 0, B, "1025", ""),
    (0, 0, D, "0", ""), (0, 0, B, "0", ""), (1, 9, X, "1e9", ".001e12"), (1, -3, X, "1e-3", "0.001e0"),
    (1, -9, X, "1e-9", "1000e-12"), (80, -3, X, "80e-3", ""), (300, 6, X, "300e6", ""), (1, 12, X, "1e12", ""),
    (1, 3, X, "1e3", ""), (3, 3, X, "3e3", ""), (3, 3, D, "3k", ""), (0, 0, X, "0", "00"), (1, -9, D, "1n", ""),
    (80, -9, D, "80n", ""), (1080, -9, D, "1080n", ""), (108, -8, D, "1080n", ""), (10800, -10, D, "1080n", ""),
    (1, -6, D, "1u", ""), (80, -6, D, "80u", ""), (1080, -6, D, "1080u", ""),
]


@pytest.mark.parametrize(("mantissa", "exponent", "fmt", "expect", "alternate"), STRINGS)
def test_canonical_strings(mantissa, exponent, fmt, expect, alternate):
    from localcluster.validation.quantity import Quantity

    assert str(Quantity(mantissa, -exponent, fmt)) == expect
    if mantissa:
        assert str(Quantity(-mantissa, -exponent, fmt)) == "-" + expect
    kept = parse(expect)
    assert kept.kept == expect  # the canonical string is kept as given
    if alternate:
        again = parse(alternate)
        assert again.kept == "" and str(again) == expect


# TestQuantityParseEmit
@pytest.mark.parametrize(("text", "expect"), [
    ("1Ki", "1Ki"), ("1Mi", "1Mi"), ("1Gi", "1Gi"), ("1024Mi", "1Gi"), ("1000M", "1G"), (".001Ki", "1024m"),
    (".000001Ki", "1024u"), (".000000001Ki", "1024n"), (".000000000001Ki", "2n"),
])
def test_parse_then_emit(text, expect):
    assert str(parse(text)) == expect
    assert str(parse("-" + text)) == "-" + expect


# TestJSONWhitespace: JSON strings are trimmed, numbers are their literal text.
@pytest.mark.parametrize(("value", "expect"), [(" 1", "1"), ("1 ", "1"), (1, "1"), (10, "10"), (-1, "-1")])
def test_json_values(value, expect):
    assert canonical(value) == expect


# What the brief and the apiserver's behaviour name, beyond Go's own tables.
@pytest.mark.parametrize(("value", "expect"), [
    (4, "4"), (0.5, "500m"), ("1000m", "1"), ("1024Mi", "1Gi"), ("1e3", "1e3"), ("100M", "100M"), (None, "0"),
    ("+1", "+1"), ("1.500", "1.500"), ("01Ki", "01Ki"),  # already canonical in shape: the string is kept
    ("1.5Gi", "1536Mi"), (1.5, "1500m"), ("1000E", "1"), ("0.1m", "100u"), (1e-7, "100e-9"),
    ("500m", "500m"), ("2e3", "2e3"), ("1E", "1E"), (".5", "500m"), (0.25, "250m"), ("0", "0"),
])
def test_json_canonical(value, expect):
    assert canonical(value) == expect


@pytest.mark.parametrize(("value", "error"), [
    ("lots", FORMAT_ERROR), ("", FORMAT_ERROR), ("1x", FORMAT_ERROR), (True, FORMAT_ERROR), ({}, FORMAT_ERROR),
    ("32MMi", SUFFIX_ERROR), ("1e", SUFFIX_ERROR),
])
def test_json_refusals(value, error):
    with pytest.raises(QuantityError, match=f"^{re.escape(error)}$"):
        canonical(value)


@pytest.mark.parametrize(("value", "text"), [
    (0.5, "0.5"), (4.0, "4"), (1500.0, "1500"), (1e-7, "1e-7"), (1e21, "1e+21"), (0.000001, "0.000001"),
    (123456789.125, "123456789.125"), (-2.5, "-2.5"), (1e-10, "1e-10"), (1.5e300, "1.5e+300"),
])
def test_floats_read_as_go_writes_them(value, text):
    assert go_float(value) == text


# --- over HTTP and kubectl: what a client reads back -------------------------------------------------

ROOT = Path(__file__).resolve().parents[3]


async def request(cluster, method: str, path: str, body=None, content_type: str = "application/json"):
    data = body if isinstance(body, bytes) or body is None else orjson.dumps(body)
    async with cluster.session(base_url=True) as http, http.request(
            method, path, data=data, headers={"Content-Type": content_type}) as resp:
        return resp.status, orjson.loads(await resp.read())


ODD_POD = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "odd"},
    "spec": {
        "initContainers": [{"name": "init", "image": "busybox", "resources": {"limits": {"cpu": "1000m"}}}],
        "containers": [{"name": "c", "image": "busybox", "resources": {
            "limits": {"cpu": 4, "memory": "1024Mi", "ephemeral-storage": "1e3"},
            "requests": {"cpu": 0.5, "memory": "100M", "example.com/gpu": " 1", "hugepages-2Mi": None}}}],
        "overhead": {"cpu": 0.25},
        "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "1.5Gi"}}],
    },
}
CANONICAL_RESOURCES = {"limits": {"cpu": "4", "memory": "1Gi", "ephemeral-storage": "1e3"},
                       "requests": {"cpu": "500m", "memory": "100M", "example.com/gpu": "1", "hugepages-2Mi": "0"}}


async def test_a_pod_made_with_numbers_and_odd_forms_reads_back_canonical(cluster):
    code, created = await request(cluster, "POST", "/api/v1/namespaces/default/pods", ODD_POD)
    assert code == 201
    _, read = await request(cluster, "GET", "/api/v1/namespaces/default/pods/odd")
    for pod in (created, read):
        spec = pod["spec"]
        assert spec["containers"][0]["resources"] == CANONICAL_RESOURCES
        assert spec["initContainers"][0]["resources"] == {"limits": {"cpu": "1"}}
        assert spec["overhead"] == {"cpu": "250m"}
        assert spec["volumes"][0]["emptyDir"] == {"sizeLimit": "1536Mi"}


async def test_workload_templates_quotas_and_patches_are_canonical(cluster):
    template = {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [
        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": 0.1, "memory": "0.5Gi"}}}]}}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"selector": {"matchLabels": {"app": "w"}}, "template": template}}
    code, made = await request(cluster, "POST", "/apis/apps/v1/namespaces/default/deployments", deployment)
    assert code == 201
    assert made["spec"]["template"]["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "100m",
                                                                                            "memory": "512Mi"}}
    strategic = {"spec": {"template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": 2.5}}}]}}}}
    code, patched = await request(cluster, "PATCH", "/apis/apps/v1/namespaces/default/deployments/d", strategic,
                                  "application/strategic-merge-patch+json")
    assert code == 200 and patched["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {
        "cpu": "2500m"}

    job = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj"},
           "spec": {"schedule": "@hourly", "jobTemplate": {"spec": {"template": {"spec": {
               "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
                                                         "resources": {"limits": {"memory": 1048576}}}]}}}}}}
    code, made = await request(cluster, "POST", "/apis/batch/v1/namespaces/default/cronjobs", job)
    assert code == 201
    assert made["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["resources"] == {
        "limits": {"memory": "1048576"}}  # DecimalSI: 1048576 has no factor of 1000 to lift into a suffix

    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
             "spec": {"hard": {"pods": 10, "requests.cpu": "2000m", "limits.memory": "2048Mi"}}}
    code, made = await request(cluster, "POST", "/api/v1/namespaces/default/resourcequotas", quota)
    assert (code, made["spec"]["hard"]) == (201, {"pods": "10", "requests.cpu": "2", "limits.memory": "2Gi"})
    made["spec"]["hard"]["pods"] = 20.0
    code, replaced = await request(cluster, "PUT", "/api/v1/namespaces/default/resourcequotas/q", made)
    assert (code, replaced["spec"]["hard"]["pods"]) == (200, "20")
    code, patched = await request(cluster, "PATCH", "/api/v1/namespaces/default/resourcequotas/q",
                                  {"spec": {"hard": {"requests.memory": "1000Ki"}}}, "application/merge-patch+json")
    assert (code, patched["spec"]["hard"]["requests.memory"]) == (200, "1000Ki")


async def test_protobuf_bodies_share_the_canonical_form(cluster):
    hard = {"cpu": {"string": "1000m"}, "memory": {"string": "1024Mi"}, "pods": {}}  # an empty Quantity is 0
    quota = pb_body("v1", "ResourceQuota", {"metadata": {"name": "q"}, "spec": {"hard": hard}})
    code, made = await post(cluster, "/api/v1/namespaces/default/resourcequotas", quota)
    assert (code, made["spec"]["hard"]) == (201, {"cpu": "1", "memory": "1Gi", "pods": "0"})
    # The protobuf decoder parses the string as it is: no trimming, unlike a JSON string.
    spaced = pb_body("v1", "ResourceQuota", {"metadata": {"name": "r"}, "spec": {"hard": {"cpu": {"string": " 1"}}}})
    code, status = await post(cluster, "/api/v1/namespaces/default/resourcequotas", spaced)
    assert (code, status["message"]) == (400, 'ResourceQuota in version "v1" cannot be handled as a ResourceQuota: '
                                              + FORMAT_ERROR)


async def test_custom_resources_keep_what_their_schema_says(cluster):
    cluster.apply_crds(ROOT / "manifests" / "crds")
    job = genericjob("train", 1, template={"spec": {"containers": [
        {"name": "c", "image": "busybox", "resources": {"limits": {"cpu": 2, "memory": "1024Mi"}}}]}})
    code, made = await request(cluster, "POST", "/apis/batch.tensorstack.dev/v1beta1/namespaces/default/genericjobs",
                               job)
    assert code == 201, made["message"]
    template = made["spec"]["replicaSpecs"][0]["template"]
    # x-kubernetes-int-or-string: stored as given (a number stays a number), as the real server does
    assert template["spec"]["containers"][0]["resources"] == {"limits": {"cpu": 2, "memory": "1024Mi"}}


async def test_kubectl_create_and_apply_read_back_canonical(cluster, kubectl):
    # `kubectl create quota` sends protobuf; `kubectl apply` sends the YAML's JSON.
    await kubectl.ok("create", "quota", "q", "--hard=cpu=1000m,memory=1024Mi,pods=10")
    hard = json.loads((await kubectl.ok("get", "quota", "q", "-o", "json")).out)["spec"]["hard"]
    assert hard == {"cpu": "1", "memory": "1Gi", "pods": "10"}
    pod = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: busybox\n"
           "    resources:\n      limits: {cpu: 4, memory: 1024Mi}\n      requests: {cpu: 0.5, memory: \"1e3\"}\n")
    await kubectl.ok("apply", "-f", "-", stdin=pod)
    shown = (await kubectl.ok("get", "pod", "p", "-o", "jsonpath={.spec.containers[0].resources}")).out
    assert json.loads(shown) == {"limits": {"cpu": "4", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1e3"}}


@pytest.mark.parametrize(("value", "text"), [
    (0.5, "0.5"), (100000.0, "100000"), (1e6, "1e+06"), (1234567.0, "1.234567e+06"), (0.0001, "0.0001"),
    (0.00001, "1e-05"), (-2.5, "-2.5"),
])
def test_floats_as_go_prints_them(value, text):
    """fmt's %v, as the strategic merge patch handler prints a patch in its 422."""
    assert go_float(value, printf=True) == text
