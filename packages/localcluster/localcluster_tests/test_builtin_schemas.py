"""The built-in kinds' OpenAPI schemas (Kubernetes' own) and the typed decoding they stand for: `kubectl
explain` of built-in kinds, the merge keys `kubectl apply` patches with, and unknown fields refused under
fieldValidation=Strict (kubectl's default) or warned about under Warn, with the real server's messages."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import yaml

from localcluster.validation import builtin_schemas

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
TYPO = "spec.template.spec.containers[0].imagee"
CRDS = Path(__file__).resolve().parents[3] / "manifests" / "crds"


def deployment(name: str = "web", **container) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "web", "image": "nginx:1.27", **container}]}}}}


async def request(cluster, method: str, path: str, body=None, content_type: str = "application/json"):
    async with cluster.session(base_url=True) as http, http.request(
            method, path, data=None if body is None else orjson.dumps(body),
            headers={"Content-Type": content_type}) as resp:
        return resp.status, orjson.loads(await resp.read()), resp.headers.getall("Warning", [])


# --- kubectl explain ---------------------------------------------------------------------------------


async def test_explain_pod_container_resources(kubectl):
    out = (await kubectl.ok("explain", "pod.spec.containers.resources")).out
    assert out.startswith("KIND:       Pod\nVERSION:    v1\n\nFIELD: resources <ResourceRequirements>\n")
    assert "DESCRIPTION:\n    Compute Resources required by this container. Cannot be updated. More info:\n" in out
    assert "    ResourceRequirements describes the compute resource requirements.\n" in out
    assert re.search(r"^  limits\t<map\[string\]Quantity>\n    Limits describes the maximum amount of compute "
                     r"resources allowed\.", out, re.M)
    assert re.search(r"^  requests\t<map\[string\]Quantity>$", out, re.M)
    assert re.search(r"^  claims\t<\[\]ResourceClaim>$", out, re.M)


async def test_explain_deployment_strategy(kubectl):
    out = (await kubectl.ok("explain", "deployment.spec.strategy")).out
    assert out.startswith("GROUP:      apps\nKIND:       Deployment\nVERSION:    v1\n\n"
                          "FIELD: strategy <DeploymentStrategy>\n")
    assert "    The deployment strategy to use to replace existing pods with new ones.\n" in out
    assert re.search(r"^  rollingUpdate\t<RollingUpdateDeployment>\n    Rolling update config params\. Present only "
                     r"if DeploymentStrategyType =\n    RollingUpdate\.$", out, re.M)
    assert re.search(r'^  type\t<string>\n    Type of deployment\. Can be "Recreate" or "RollingUpdate"\. Default is\n'
                     r"    RollingUpdate\.$", out, re.M)


async def test_explain_configmap_and_what_is_not_there(kubectl):
    out = (await kubectl.ok("explain", "configmap")).out
    assert out.startswith("KIND:       ConfigMap\nVERSION:    v1\n\nDESCRIPTION:\n"
                          "    ConfigMap holds configuration data for pods to consume.\n")
    assert re.search(r"^  data\t<map\[string\]string>\n    Data contains the configuration data\.", out, re.M)
    assert re.search(r"^  immutable\t<boolean>$", out, re.M)
    assert re.search(r"^  metadata\t<ObjectMeta>$", out, re.M)
    recursive = (await kubectl.ok("explain", "deployment.spec", "--recursive")).out
    assert re.search(r"^      containers\t<\[\]Container> -required-$", recursive, re.M)
    missing = await kubectl.run("explain", "pod.spec.nothing")
    assert missing.code == 1 and 'field "nothing" does not exist' in missing.err


# --- kubectl apply: validation by the server, patches from the schema's merge keys ----------------------


async def test_apply_validate_strict_names_a_typo_as_a_real_server(kubectl):
    typo = yaml.safe_dump(deployment(imagee="nginx"))
    created = await kubectl.run("apply", "--validate=strict", "-f", "-", stdin=typo)
    assert created.code == 1
    assert created.err == ('Error from server (BadRequest): error when creating "STDIN": Deployment in version "v1" '
                           f'cannot be handled as a Deployment: strict decoding error: unknown field "{TYPO}"\n')
    await kubectl.ok("apply", "-f", "-", stdin=yaml.safe_dump(deployment()))
    patched = await kubectl.run("apply", "--validate=strict", "-f", "-", stdin=typo)
    # An existing object is patched: the strategic merge patch handler's 422, naming the patch.
    assert patched.code == 1
    assert patched.err.startswith('The request is invalid: patch: Invalid value: "map[metadata:map[annotations:map['
                                  'kubectl.kubernetes.io/last-applied-configuration:')
    assert patched.err.endswith(f'spec:map[template:map[spec:map[$setElementOrder/containers:[map[name:web]] '
                                f'containers:[map[imagee:nginx name:web]]]]]]": strict decoding error: unknown field '
                                f'"{TYPO}"\n')
    warned = await kubectl.run("apply", "--validate=warn", "-f", "-", stdin=yaml.safe_dump(deployment("other",
                                                                                                     imagee="x")))
    assert warned.code == 0 and f'Warning: unknown field "{TYPO}"' in warned.err
    stored = (await kubectl.ok("get", "deployment", "other", "-o", "jsonpath={.spec.template.spec.containers[0]}")).out
    assert "imagee" not in orjson.loads(stored)  # the Go type had nowhere to keep it


async def test_apply_patches_lists_by_their_merge_keys(kubectl):
    """kubectl computes the patch from the v3 schema's merge keys: a container added in the file is merged
    into the list by name, and one removed from the file is deleted from it, the others kept."""
    two = deployment()
    two["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "busybox", "env": [
        {"name": "A", "value": "1"}]})
    await kubectl.ok("apply", "-f", "-", stdin=yaml.safe_dump(two))
    await kubectl.ok("patch", "deployment", "web", "--type=strategic", "-p",
                     '{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"B","value":"2"}]}]}}}}')
    two["spec"]["template"]["spec"]["containers"][1]["image"] = "busybox:1.36"
    applied = await kubectl.ok("apply", "-f", "-", stdin=yaml.safe_dump(two))
    assert applied.out.strip() == "deployment.apps/web configured"
    containers = orjson.loads((await kubectl.ok("get", "deployment", "web", "-o",
                                                "jsonpath={.spec.template.spec.containers}")).out)
    assert [(c["name"], c["image"], c.get("env")) for c in containers] == [
        ("web", "nginx:1.27", [{"name": "B", "value": "2"}]), ("side", "busybox:1.36", [{"name": "A", "value": "1"}])]
    del two["spec"]["template"]["spec"]["containers"][1]
    await kubectl.ok("apply", "-f", "-", stdin=yaml.safe_dump(two))
    containers = orjson.loads((await kubectl.ok("get", "deployment", "web", "-o",
                                                "jsonpath={.spec.template.spec.containers}")).out)
    assert [c["name"] for c in containers] == ["web"] and containers[0]["env"] == [{"name": "B", "value": "2"}]


# --- the documents --------------------------------------------------------------------------------------


def test_every_served_built_in_kind_has_its_schema(cluster):
    """The generated data and the served kinds agree (regenerate k8s_openapi.json.gz when adding a kind)."""
    for rt in cluster.registry.all():
        if rt.crd_name is None:
            assert builtin_schemas.has_kind(rt.group, rt.version, rt.kind), rt.kind
    assert "release-1.35" in builtin_schemas.source() or "v35.0.0" in builtin_schemas.source()


async def test_v3_documents_carry_the_real_schemas(cluster):
    async with cluster.session(base_url=True) as http:
        async with http.get("/openapi/v3") as resp:
            root = (await resp.json())["paths"]
        assert {"api/v1", "apis/apps/v1", "apis/batch/v1", "apis/rbac.authorization.k8s.io/v1",
                "apis/coordination.k8s.io/v1", "apis/events.k8s.io/v1", "apis/policy/v1",
                "apis/scheduling.k8s.io/v1", "apis/apiextensions.k8s.io/v1"} <= set(root)
        async with http.get(root["api/v1"]["serverRelativeURL"]) as resp:
            assert resp.headers["Cache-Control"] == "public, immutable"
            core = (await resp.json())["components"]["schemas"]
        async with http.get(root["apis/apps/v1"]["serverRelativeURL"]) as resp:
            apps = await resp.json()
    assert core["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Pod", "version": "v1"}]
    containers = core["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert {k: v for k, v in containers.items() if k.startswith("x-")} == {
        "x-kubernetes-list-map-keys": ["name"], "x-kubernetes-list-type": "map",
        "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"}
    assert containers["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}
    resources = core["io.k8s.api.core.v1.Container"]["properties"]["resources"]
    assert resources["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.core.v1.ResourceRequirements"}]
    assert core["io.k8s.apimachinery.pkg.api.resource.Quantity"]["oneOf"] == [{"type": "string"}, {"type": "number"}]
    assert "labels" in core[META + "ObjectMeta"]["properties"]
    assert "io.k8s.api.apps.v1.Deployment" not in core  # each group-version's own kinds and what they refer to
    patch = apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" in patch["requestBody"]["content"]
    assert "io.k8s.api.core.v1.PodTemplateSpec" in apps["components"]["schemas"]


async def test_custom_resource_documents_and_v2_use_the_real_meta_types(cluster):
    cluster.apply_crds(CRDS)
    async with cluster.session(base_url=True) as http:
        async with http.get("/openapi/v3/apis/batch.tensorstack.dev/v1beta1") as resp:
            custom = (await resp.json())["components"]["schemas"]
        async with http.get("/openapi/v2") as resp:
            swagger = (await resp.json())["definitions"]
    assert custom[META + "ObjectMeta"]["properties"]["ownerReferences"]["x-kubernetes-patch-merge-key"] == "uid"
    # v2 holds the built-in definitions as Kubernetes publishes them (no allOf, refs to #/definitions/).
    assert swagger["io.k8s.api.core.v1.Pod"] == builtin_schemas.definitions()["io.k8s.api.core.v1.Pod"]
    assert swagger["io.k8s.api.core.v1.Container"]["properties"]["resources"]["$ref"] == \
        "#/definitions/io.k8s.api.core.v1.ResourceRequirements"
    assert swagger["dev.tensorstack.batch.v1beta1.GenericJob"]["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/definitions/" + META + "ObjectMeta"}]


# --- unknown fields over HTTP: create, replace and each patch type -------------------------------------


async def test_unknown_fields_per_field_validation(cluster):
    base = "/apis/apps/v1/namespaces/default/deployments"
    typo = deployment(imagee="x")
    typo["metadata"]["colour"] = "blue"
    code, status, _ = await request(cluster, "POST", base + "?fieldValidation=Strict", typo)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"] == ('Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
                                 f'unknown field "metadata.colour", unknown field "{TYPO}"')
    code, made, warnings = await request(cluster, "POST", base + "?fieldValidation=Warn", typo)
    assert code == 201 and warnings == ['299 - "unknown field \\"metadata.colour\\""',
                                        f'299 - "unknown field \\"{TYPO}\\""']
    assert "colour" not in made["metadata"] and "imagee" not in made["spec"]["template"]["spec"]["containers"][0]
    code, _, warnings = await request(cluster, "POST", base, deployment("quiet", imagee="x"))
    assert (code, warnings) == (201, [f'299 - "unknown field \\"{TYPO}\\""'])  # no fieldValidation: Warn, the default

    made["spec"]["replica"] = 2
    code, status, _ = await request(cluster, "PUT", base + "/web?fieldValidation=Strict", made)
    assert (code, status["message"]) == (400, 'Deployment in version "v1" cannot be handled as a Deployment: strict '
                                              'decoding error: unknown field "spec.replica"')

    smp = {"spec": {"replica": 2, "paused": False}}
    code, status, _ = await request(cluster, "PATCH", base + "/web?fieldValidation=Strict", smp,
                                    "application/strategic-merge-patch+json")
    assert (code, status["reason"], status["message"]) == (
        422, "Invalid", ' "" is invalid: patch: Invalid value: "map[spec:map[paused:false replica:2]]": strict '
                        'decoding error: unknown field "spec.replica"')
    assert status["details"] == {"name": "", "kind": "", "causes": [{
        "reason": "FieldValueInvalid", "field": "patch",
        "message": 'Invalid value: "map[spec:map[paused:false replica:2]]": strict decoding error: unknown field '
                   '"spec.replica"'}]}
    code, status, _ = await request(cluster, "PATCH", base + "/web?fieldValidation=Strict", smp,
                                    "application/merge-patch+json")
    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"].startswith(' "" is invalid: patch: Invalid value: "{\\"apiVersion\\":\\"apps/v1\\",')
    assert status["message"].endswith('": strict decoding error: unknown field "spec.replica"')
    code, patched, warnings = await request(cluster, "PATCH", base + "/web?fieldValidation=Warn", smp,
                                            "application/merge-patch+json")
    assert (code, warnings) == (200, ['299 - "unknown field \\"spec.replica\\""']) and "replica" not in patched["spec"]


async def test_a_custom_resources_metadata_is_an_object_meta(cluster):
    # The apiextensions server decodes a custom resource's metadata as an ObjectMeta: a field it lacks is
    # dropped, and named per fieldValidation (Warn when none is given), as a built-in kind's.
    from .test_crd import CRD, widget

    await request(cluster, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
    group, version, plural = CRD["spec"]["group"], CRD["spec"]["versions"][0]["name"], CRD["spec"]["names"]["plural"]
    base = f"/apis/{group}/{version}/namespaces/default/{plural}"

    async def create(name: str, validation: str):
        body = widget(name, size=1)
        body["metadata"].update(colour="red", labels={"a": "b"})
        query = f"?fieldValidation={validation}" if validation else ""
        return await request(cluster, "POST", base + query, body)

    code, status, _ = await create("strict", "Strict")
    assert (code, status["message"]) == (400, f'{CRD["spec"]["names"]["kind"]} in version "{version}" cannot be '
                                               'handled as a Widget: strict decoding error: unknown field '
                                               '"metadata.colour"')
    for name, validation in (("warned", "Warn"), ("default", "")):
        code, made, warnings = await create(name, validation)
        assert (code, warnings) == (201, ['299 - "unknown field \\"metadata.colour\\""'])
        assert "colour" not in made["metadata"] and made["metadata"]["labels"] == {"a": "b"}
