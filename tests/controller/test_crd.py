"""The generated CRDs: up to date, structural, and enforced by an API server."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from controller.jobs.children.podgroup import podgroup_crd
from controller.jobs.kind import KindBase
from controller.jobs.schema import crd as generic
from controller.kinds import registry
from controller.kinds.genericjob import crd
from controller.kinds.genericjob.models import GenericJob
from controller.kinds.genericjob.validation import validate
from controller.kinds.pytorch.crd import pytorch_crd
from controller.kinds.tensorflow.crd import tensorflow_crd
from localcluster import ApiError, LocalCluster
from tests.builders import JobBuilder

pytestmark = pytest.mark.slow  # runs long: a cluster with the CRDs' CEL rules a test, 54 tests (40 s with -n 4, loaded)

ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = ROOT / "manifests" / "crds"


def openapi(definition: dict) -> dict:
    return definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def nodes(schema: dict, path: str = ""):
    """(path, node) of every schema node."""
    yield path, schema
    for name, child in (schema.get("properties") or {}).items():
        yield from nodes(child, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from nodes(schema["additionalProperties"], f"{path}{{}}")


# --- the files ----------------------------------------------------------------------------------


def test_checked_in_crds_are_up_to_date():
    """Every registered kind's CRDs (registry.crd_files), and no others in manifests/crds."""
    files = registry.crd_files()
    assert set(crd.manifests()) <= set(files)
    assert sorted(p.name for p in CRD_DIR.iterdir()) == sorted(files)
    for name, text in files.items():
        path = CRD_DIR / name
        assert path.read_text() == text, \
            f"{path} is out of date with the models: run python -m controller.kinds.<kind>.crd"


def test_main_writes_both_files(tmp_path):
    crd.main(["--dir", str(tmp_path)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["genericjob.yaml", "podgroup.yaml"]
    assert yaml.safe_load((tmp_path / "genericjob.yaml").read_text()) == crd.genericjob_crd()
    assert yaml.safe_load((tmp_path / "podgroup.yaml").read_text()) == podgroup_crd()
    assert crd.manifests() == crd.manifests()  # stable


# --- the GenericJob CRD -------------------------------------------------------------------------


def test_names_scope_subresources_and_columns():
    definition = crd.genericjob_crd()
    spec = definition["spec"]
    assert definition["metadata"]["name"] == "genericjobs.batch.tensorstack.dev"
    assert spec["group"] == "batch.tensorstack.dev" and spec["scope"] == "Namespaced"
    assert spec["names"] == {"kind": "GenericJob", "listKind": "GenericJobList", "plural": "genericjobs",
                             "singular": "genericjob", "shortNames": ["gj"], "categories": ["all", "t9k"]}
    version = spec["versions"][0]
    assert (version["name"], version["served"], version["storage"]) == ("v1beta1", True, True)
    assert version["subresources"] == {"status": {}}
    assert [(c["name"], c["type"], c["jsonPath"], c.get("priority", 0))
            for c in version["additionalPrinterColumns"]] == [
        ("Phase", "string", ".status.phase", 0),
        ("Ready", "string", ".status.ready", 0),
        ("Restarts", "integer", ".status.backoffCount", 0),
        ("Reason", "string", ".status.reason", 0),
        ("Age", "date", ".metadata.creationTimestamp", 0),
        ("Started", "date", ".status.startTime", 1),
        ("Completed", "date", ".status.completionTime", 1),
        ("Message", "string", '.status.conditions[?(@.type=="Failed")].message', 1),
    ]


def test_every_kind_has_the_engines_columns_with_why_it_failed():
    """Every registered kind's CRD prints the engine's columns (schema/crd.py's job_columns): `-o wide`'s MESSAGE,
    the Failed condition's message, for each (issue 42)."""
    kinds = {kind.api.kind for kind in registry.KINDS.values()}
    printed = {}
    fast = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's: the CRDs are ~1.5 MB of YAML
    for text in registry.crd_files().values():
        definition = yaml.load(text, Loader=fast)
        if definition["spec"]["names"]["kind"] in kinds:
            printed[definition["spec"]["names"]["kind"]] = definition["spec"]["versions"][0]["additionalPrinterColumns"]
    assert printed == dict.fromkeys(kinds, generic.job_columns())
    [message] = [c for c in generic.job_columns() if c["name"] == "Message"]
    assert (message["priority"], message["jsonPath"]) == (1, '.status.conditions[?(@.type=="Failed")].message')


@pytest.mark.parametrize("definition", [crd.genericjob_crd(), podgroup_crd()], ids=["genericjob", "podgroup"])
def test_schemas_are_structural(definition):
    schema = openapi(definition)
    for path, node in nodes(schema):
        assert not {"$ref", "$defs", "anyOf", "oneOf", "allOf", "title"} & node.keys(), path
        assert node.get("type") or node.get("x-kubernetes-int-or-string") or \
            node.get("x-kubernetes-preserve-unknown-fields"), f"{path} has no type"
        assert node.get("additionalProperties") is not True, path
        assert node.get("default", 0) is not None, path
    from localcluster.crd import is_structural

    assert is_structural(schema) == []


def test_spec_schema_details():
    spec = openapi(crd.genericjob_crd())["properties"]["spec"]
    props = spec["properties"]
    assert spec["required"] == ["replicaSpecs"]
    assert set(props) == {"successRules", "failureRules", "service", "runMode", "cleanUpPolicy", "scheduler",
                          "replicaSpecs"}
    replica = props["replicaSpecs"]["items"]
    assert replica["required"] == ["type", "template"]
    assert replica["properties"]["replicas"] == {"type": "integer", "minimum": 0, "maximum": 1000, "default": 1,
                                                 "description": "The desired number of replicas of this type. "
                                                                "Defaults to 1."}
    assert replica["properties"]["restartPolicy"]["properties"]["policy"]["enum"] == ["Never", "OnFailure", "Always"]
    assert replica["properties"]["restartPolicy"]["properties"]["limit"]["minimum"] == 0
    template = replica["properties"]["template"]  # a PodTemplateSpec, not preserved as given any more
    assert template["type"] == "object" and "x-kubernetes-preserve-unknown-fields" not in template
    assert template["required"] == ["spec"] and set(template["properties"]) == {"metadata", "spec"}
    containers = template["properties"]["spec"]["properties"]["containers"]
    assert containers["minItems"] == 1 and containers["x-kubernetes-list-map-keys"] == ["name"]
    assert containers["items"]["required"] == ["image", "name"]
    assert {"command", "args", "env", "ports", "resources"} <= set(containers["items"]["properties"])
    assert props["cleanUpPolicy"]["enum"] == ["None", "Unfinished", "All"]
    t9k = props["scheduler"]["properties"]["t9kScheduler"]  # as spec/001 spells it
    assert t9k["required"] == ["queue"]
    assert (t9k["properties"]["priority"]["minimum"], t9k["properties"]["priority"]["maximum"]) == (0, 100)
    for rules in ("successRules", "failureRules"):
        rank = props[rules]["items"]["additionalProperties"]["items"]
        assert rank["x-kubernetes-int-or-string"] is True and "type" not in rank
    assert props["service"]["properties"]["ports"]["items"]["properties"]["targetPort"][
        "x-kubernetes-int-or-string"] is True
    assert props["service"]["nullable"] is True
    for path, node in nodes(spec, "spec"):  # Kubernetes' own types are left undescribed (size: see below)
        if not path.startswith("spec.replicaSpecs[].template.") and not path.endswith(("[]", "{}")):
            assert node.get("description"), f"{path} has no description"


@pytest.mark.parametrize("definition", [crd.genericjob_crd(), tensorflow_crd(), pytorch_crd()],
                         ids=["genericjob", "tensorflow", "pytorch"])
def test_a_crd_fits_in_the_last_applied_annotation_of_a_client_side_apply(definition):
    """`kubectl apply` (client-side) keeps the whole object as JSON in an annotation, and the API server allows
    256 KiB of annotations: the embedded pod template leaves the CRDs well within it."""
    assert len(json.dumps(definition, separators=(",", ":"))) < 128 * 1024


def test_status_schema_is_full_with_preserved_containers():
    status = openapi(crd.genericjob_crd())["properties"]["status"]
    assert set(status["properties"]) == {"observedGeneration", "phase", "conditions", "tasks", "aggregate",
                                         "readyReplicas", "ready", "backoffCount", "reason", "startTime",
                                         "completionTime", "cleanUpPolicy", "removedReplicas", "templateHashes"}
    replica = status["properties"]["tasks"]["items"]["properties"]["replicas"]["items"]
    assert set(replica["properties"]) == {"name", "uid", "phase", "containers", "restartCount", "lastRestartUid",
                                         "lastRestartTime", "restartStreak", "ready", "waiting", "debug", "removed"}
    assert replica["properties"]["containers"]["items"]["x-kubernetes-preserve-unknown-fields"] is True
    assert set(status["properties"]["aggregate"]["properties"]) == {
        "creating", "pending", "running", "succeeded", "failed", "unknown", "deleted"}


def test_structural_conversion_of_pydantic_forms():
    source = {
        "$defs": {"Inner": {"title": "Inner", "type": "object", "description": "inner",
                            "properties": {"x": {"type": "integer", "title": "X"}}}},
        "type": "object",
        "properties": {
            "ref": {"$ref": "#/$defs/Inner", "description": "the field's"},
            "optional": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}], "default": None},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "free": {"type": "object", "additionalProperties": True},
            "t9KScheduler": {"type": "string"},
        },
    }
    assert crd.structural(source) == {"type": "object", "properties": {
        "ref": {"type": "object", "description": "the field's", "properties": {"x": {"type": "integer"}}},
        "optional": {"type": "object", "description": "inner", "properties": {"x": {"type": "integer"}},
                     "nullable": True},
        "either": {"x-kubernetes-int-or-string": True},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "t9kScheduler": {"type": "string"},
    }}
    with pytest.raises(ValueError, match="no structural form"):
        crd.structural({"anyOf": [{"type": "integer"}, {"type": "boolean"}]})


def test_the_model_reads_t9k_scheduler_as_the_crd_spells_it():
    job = GenericJob.from_object({"metadata": {"name": "j"}, "spec": {
        "scheduler": {"t9kScheduler": {"queue": "default", "priority": 50}},
        "replicaSpecs": [{"type": "worker", "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}]}})
    assert job.spec.scheduler.t9k_scheduler is not None


# --- the PodGroup CRD ---------------------------------------------------------------------------


def test_podgroup_crd():
    definition = podgroup_crd()
    assert definition["metadata"]["name"] == "podgroups.scheduler.tensorstack.dev"
    assert definition["spec"]["scope"] == "Namespaced"
    assert definition["spec"]["names"]["kind"] == "PodGroup"
    assert definition["spec"]["names"]["shortNames"] == ["t9kpg"]  # not Volcano's pg
    version = definition["spec"]["versions"][0]
    assert version["name"] == "v1beta1" and version["subresources"] == {"status": {}}
    schema = openapi(definition)
    spec = schema["properties"]["spec"]
    assert set(spec["properties"]) == {"minMember", "queue", "priority"}
    assert (spec["properties"]["priority"]["minimum"], spec["properties"]["priority"]["maximum"]) == (0, 100)
    assert schema["properties"]["status"]["x-kubernetes-preserve-unknown-fields"] is True


# --- through an API server --------------------------------------------------------------------

CONTAINER = {"name": "main", "image": "trainer", "command": ["sleep", "365"]}


def job_object(name: str = "generic-example", **spec) -> dict:
    spec.setdefault("replicaSpecs", [{"type": "worker", "replicas": 4,
                                      "template": {"spec": {"containers": [CONTAINER]}}}])
    return JobBuilder(name).spec(**spec).obj()


@pytest.fixture
async def api():
    async with LocalCluster() as cluster:
        assert sorted(cluster.apply_crds(CRD_DIR)) == ["genericjobs.batch.tensorstack.dev",
                                                       "mpijobs.batch.tensorstack.dev",
                                                       "podgroups.scheduler.tensorstack.dev",
                                                       "pytorchtrainingjobs.batch.tensorstack.dev",
                                                       "tensorflowtrainingjobs.batch.tensorstack.dev"]
        jobs = cluster.registry.get("batch.tensorstack.dev", "v1beta1", "genericjobs")

        class Api:
            def create(self, obj: dict) -> dict:
                return cluster.api.create(jobs, "default", copy.deepcopy(obj))

            def get(self, name: str) -> dict:
                return copy.deepcopy(cluster.api.get(jobs, "default", name))  # the store's own object otherwise

            def update(self, obj: dict) -> dict:
                return cluster.api.update(jobs, "default", obj["metadata"]["name"], copy.deepcopy(obj))

        yield Api()


def rejected(api, obj: dict) -> ApiError:
    with pytest.raises(ApiError) as caught:
        api.create(obj)
    assert caught.value.code == 422, caught.value.message
    return caught.value


async def test_valid_jobs_are_stored_with_defaults_and_parse_cleanly(api):
    stored = api.create(job_object(
        service={"ports": [{"name": "http", "port": 2222}]},
        successRules=[{"worker": [0, "1"]}], failureRules=[{"worker": [0]}, {"worker": [1]}],
        runMode={"pause": {"enabled": True, "resumeSpecs": [{"type": "worker", "command": ["/usr/bin/sshd"]}]}},
        scheduler={"t9kScheduler": {"queue": "default"}},
    ))
    spec = stored["spec"]
    assert spec["cleanUpPolicy"] == "None" and spec["replicaSpecs"][0]["replicas"] == 4
    assert spec["scheduler"]["t9kScheduler"] == {"queue": "default", "priority": 0}
    assert spec["runMode"]["pause"]["resumeSpecs"][0]["skipInitContainer"] is False
    assert spec["successRules"] == [{"worker": [0, "1"]}]  # IntOrString kept as given
    assert validate(GenericJob.from_object(stored)) == []
    minimal = api.create(job_object("minimal", replicaSpecs=[{"type": "worker", "template": {"spec": {
        "containers": [CONTAINER], "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]}}}]))
    assert minimal["spec"]["replicaSpecs"][0]["replicas"] == 1
    assert minimal["spec"]["replicaSpecs"][0]["template"]["spec"]["volumes"][0] == {  # not pruned
        "name": "dshm", "emptyDir": {"medium": "Memory"}}
    ported = api.create(job_object("ported", replicaSpecs=[{"type": "worker", "template": {
        "metadata": {"labels": {"app": "x"}, "annotations": {"a": "b"}, "creationTimestamp": None},
        "spec": {"containers": [{**CONTAINER, "ports": [{"containerPort": 2222, "name": "tfjob-port"}],
                                 "resources": {"limits": {"cpu": 2, "memory": "1Gi"}}}]}}}]))
    template = ported["spec"]["replicaSpecs"][0]["template"]
    assert template["metadata"] == {"labels": {"app": "x"}, "annotations": {"a": "b"}}  # kept; a null pruned
    container = template["spec"]["containers"][0]
    assert container["ports"] == [{"containerPort": 2222, "name": "tfjob-port", "protocol": "TCP"}]  # defaulted
    assert container["resources"] == {"limits": {"cpu": 2, "memory": "1Gi"}}


@pytest.mark.parametrize(("spec", "field", "text"), [
    ({"replicaSpecs": [{"type": "worker", "replicas": -1, "template": {"spec": {"containers": [CONTAINER]}}}]},
     "spec.replicaSpecs[0].replicas", "greater than or equal to 0"),
    ({"replicaSpecs": [{"type": "Worker", "template": {"spec": {"containers": [CONTAINER]}}}]},
     "spec.replicaSpecs[0].type", "should match"),
    ({"replicaSpecs": [{"type": "worker"}]}, "spec.replicaSpecs[0].template", "Required value"),
    ({"replicaSpecs": [{"type": "worker", "template": {"spec": {"containers": []}}}]},
     "spec.replicaSpecs[0].template.spec.containers", "at least 1 items"),
    ({"replicaSpecs": []}, "spec.replicaSpecs", "at least 1 items"),
    ({"replicaSpecs": [{"type": "worker", "replicas": 0, "template": {"spec": {"containers": [CONTAINER]}}}]},
     "spec.replicaSpecs", "a job needs at least one replica"),
    ({"replicaSpecs": [{"type": "worker", "restartPolicy": {"policy": "Sometimes"},
                        "template": {"spec": {"containers": [CONTAINER]}}}]},
     "spec.replicaSpecs[0].restartPolicy.policy", "Unsupported value"),
    ({"replicaSpecs": [{"type": "worker", "restartPolicy": {"limit": -1},
                        "template": {"spec": {"containers": [CONTAINER]}}}]},
     "spec.replicaSpecs[0].restartPolicy.limit", "greater than or equal to 0"),
    ({"cleanUpPolicy": "Some"}, "spec.cleanUpPolicy", "Unsupported value"),
    ({"scheduler": {"t9kScheduler": {"queue": "q", "priority": 101}}},
     "spec.scheduler.t9kScheduler.priority", "less than or equal to 100"),
    ({"scheduler": {"t9kScheduler": {"priority": 1}}}, "spec.scheduler.t9kScheduler.queue", "Required value"),
    ({"successRules": [{"worker": ["one"]}]}, "spec.successRules[0].worker[0]", "should match"),
    ({"failureRules": [{"worker": [-1]}]}, "spec.failureRules[0].worker[0]", "greater than or equal to 0"),
    ({"failureRules": [{"worker": [True]}]}, "spec.failureRules[0].worker[0]", "must be of type"),
    ({"service": {"ports": [{"name": "http", "port": 0}]}}, "spec.service.ports[0].port", "greater than or equal"),
    # Service ports: what the Service API would refuse for every replica's Service (ValidateService).
    ({"service": {"ports": [{"name": "HTTP", "port": 80}]}}, "spec.service.ports[0].name", "should match"),
    ({"service": {"ports": [{"name": "a" * 64, "port": 80}]}}, "spec.service.ports[0].name", "Too long"),
    ({"service": {"ports": [{"port": 80, "protocol": "tcp"}]}}, "spec.service.ports[0].protocol",
     "Unsupported value"),
    ({"service": {"ports": [{"port": 65536}]}}, "spec.service.ports[0].port", "less than or equal to 65535"),
    ({"service": {"ports": [{"port": 80, "targetPort": 0}]}}, "spec.service.ports[0].targetPort",
     "greater than or equal to 1"),
    ({"service": {"ports": [{"port": 80, "targetPort": "8080"}]}}, "spec.service.ports[0].targetPort",
     "should match"),
    ({"service": {"ports": [{"port": 80, "targetPort": "web--ui"}]}}, "spec.service.ports[0].targetPort",
     "should match"),
    ({"service": {"ports": [{"port": 80, "targetPort": "sixteen-letters1"}]}}, "spec.service.ports[0].targetPort",
     "Too long"),
    ({"service": {"ports": [{"port": 80}, {"name": "b", "port": 81}]}}, "spec.service.ports",
     "every port needs a name"),
    ({"service": {"ports": [{"name": "a", "port": 80}, {"name": "a", "port": 81}]}}, "spec.service.ports",
     "port names must be unique"),
    ({"service": {"ports": [{"name": "a", "port": 80}, {"name": "b", "port": 80, "protocol": "TCP"}]}},
     "spec.service.ports", "once per protocol"),
    ({"runMode": {"debug": {"enabled": "yes"}}}, "spec.runMode.debug.enabled", "must be of type boolean"),
    ({"replicaSpecs": [{"type": "worker", "template": {"spec": {"containers": [CONTAINER]}}},
                       {"type": "worker", "template": {"spec": {"containers": [CONTAINER]}}}]},
     "spec.replicaSpecs", "replica types must be unique"),
    # The pod template, as a Deployment's template is checked (unknown fields: test_kubectl.py in tests/e2e).
    ({"replicaSpecs": [{"type": "worker", "template": {"spec": {"containers": [{"name": "main"}]}}}]},
     "spec.replicaSpecs[0].template.spec.containers[0].image", "Required value"),
    ({"replicaSpecs": [{"type": "worker", "template": {"spec": {"containers": [{"image": "busybox"}]}}}]},
     "spec.replicaSpecs[0].template.spec.containers[0].name", "Required value"),
    ({"replicaSpecs": [{"type": "worker", "template": {"spec": {"containers": [{"name": "Main", "image": "b"}]}}}]},
     "spec.replicaSpecs[0].template.spec.containers[0].name", "should match"),
    ({"replicaSpecs": [{"type": "worker", "template": {"spec": {"containers": [CONTAINER, CONTAINER]}}}]},
     "spec.replicaSpecs[0].template.spec.containers[1]", "Duplicate value"),
    ({"replicaSpecs": [{"type": "worker", "template": {"spec": {"containers": [{**CONTAINER, "command": "sleep"}]}}}]},
     "spec.replicaSpecs[0].template.spec.containers[0].command", "must be of type array"),
    ({"replicaSpecs": [{"type": "worker", "template": {"spec": {"containers": [
        {**CONTAINER, "resources": {"limits": {"cpu": "lots"}}}]}}}]},
     "spec.replicaSpecs[0].template.spec.containers[0].resources.limits.cpu", "should match"),
    ({"replicaSpecs": [{"type": "worker", "template": {"spec": {"containers": [CONTAINER], "volumes": [{}]}}}]},
     "spec.replicaSpecs[0].template.spec.volumes[0].name", "Required value"),
])
async def test_invalid_jobs_are_rejected_naming_the_field(api, spec, field, text):
    error = rejected(api, job_object("bad", **spec))
    assert f"{field}:" in error.message and text in error.message


async def test_missing_spec_is_rejected(api):
    error = rejected(api, {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "GenericJob",
                           "metadata": {"name": "nospec"}})
    assert "spec: Required value" in error.message


async def test_names_that_would_make_invalid_pods_or_services_are_rejected(api):
    service = {"ports": [{"name": "http", "port": 2222}]}
    fits = "j" * (63 - len("-worker-3"))
    api.create(job_object(fits, service=service))
    error = rejected(api, job_object(fits + "j", service=service))
    assert "metadata:" in error.message and "Service name of at most 63 characters" in error.message
    error = rejected(api, job_object("1job", service=service))
    assert "DNS-1035" in error.message
    api.create(job_object("1job"))  # without Services, a pod name may start with a digit
    api.create(job_object("j" * 63))
    error = rejected(api, job_object("j" * 64))
    assert "metadata:" in error.message and "no more than 63 characters" in error.message


async def test_resume_specs_cannot_change_once_set(api):
    resume = [{"type": "worker", "skipInitContainer": True, "command": ["/usr/bin/sshd"]}]
    api.create(job_object(runMode={"pause": {"enabled": True, "resumeSpecs": resume}}))

    def update(change) -> None:
        obj = api.get("generic-example")
        change(obj["spec"])
        api.update(obj)

    update(lambda spec: spec["runMode"]["pause"].update(enabled=False))  # pausing and resuming is fine
    update(lambda spec: spec.update(cleanUpPolicy="All"))
    for change in (
        lambda spec: spec["runMode"]["pause"]["resumeSpecs"][0].update(command=["sleep", "inf"]),
        lambda spec: spec["runMode"]["pause"]["resumeSpecs"].append({"type": "master"}),
        lambda spec: spec["runMode"]["pause"].pop("resumeSpecs"),
        lambda spec: spec["runMode"].pop("pause"),
        lambda spec: spec.pop("runMode"),
    ):
        with pytest.raises(ApiError) as caught:
            update(change)
        assert caught.value.code == 422
        assert "spec.runMode.pause.resumeSpecs: Invalid value" in caught.value.message
        assert "resumeSpecs cannot be changed once set" in caught.value.message


async def test_resume_specs_can_be_set_when_there_were_none(api):
    api.create(job_object(runMode={"pause": {"enabled": True}}))
    obj = api.get("generic-example")
    obj["spec"]["runMode"]["pause"]["resumeSpecs"] = [{"type": "worker", "args": ["--resume"]}]
    assert api.update(obj)["spec"]["runMode"]["pause"]["resumeSpecs"][0]["args"] == ["--resume"]


async def test_an_edit_to_no_replicas_is_refused_and_one_type_may_be_zero(api):
    two = [{"type": t, "replicas": 1, "template": {"spec": {"containers": [CONTAINER]}}} for t in ("worker", "ps")]
    api.create(job_object(replicaSpecs=two))
    obj = api.get("generic-example")
    obj["spec"]["replicaSpecs"][1]["replicas"] = 0
    api.update(obj)
    obj = api.get("generic-example")
    obj["spec"]["replicaSpecs"][0]["replicas"] = 0
    with pytest.raises(ApiError) as caught:
        api.update(obj)
    assert caught.value.code == 422 and "spec.replicaSpecs: Invalid value" in caught.value.message
    assert "a job needs at least one replica" in caught.value.message


@pytest.mark.parametrize("kind", list(registry.KINDS.values()), ids=list(registry.KINDS))
def test_status_group_restart_is_in_the_schema_of_the_kinds_whose_replicas_restart_together(kind):
    # The engine writes status.groupRestart only for a kind that declares a group restart (MPIJob's); a structural
    # schema prunes a field it lacks, and a field no controller writes would only mislead `kubectl explain`.
    declares = type(kind).restart_together is not KindBase.restart_together
    status = openapi(kind.crd())["properties"]["status"]["properties"]
    assert ("groupRestart" in status) == declares, kind.api.kind
