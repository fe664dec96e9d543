"""A fourth kind, in tests only and in this one file: ShellJob, replicas of any type that each run their template
once; the job succeeds when every replica has, and fails when any fails (no restarts). It is the kind SDK's
proof that a kind is one folder: its model, CRD, `JobKind` and model contract (its rules for the engine's model test)
here, built on KindBase's defaults, registered in a test registry, parsed, validated, planned, its CRD generated and
applied to localcluster, a job of it run to success by the engine, and, registered in the real registry for the
length of a test, run through the engine's model test (tests/controller/model) and the RBAC exactness test
(tests/program/test_rbac_exactness.py, which registers it and renders its CRD and RBAC from the registry) and drawn by
the chaos run's workload (tests/chaos/jobs.py), with no line of the engine, of the other kinds or of those tests
changed for it.
"""

from __future__ import annotations

import json
import random
from typing import Annotated, Any

import pytest
from kubernetes_asyncio import client
from prometheus_client import CollectorRegistry
from pydantic import Field

from controller.jobs.children.pods import Override, apply_override, desired_pod
from controller.jobs.decisions.actions import CreatePod
from controller.jobs.decisions.plan import plan
from controller.jobs.decisions.status_codec import TasksStatus
from controller.jobs.kind import KindApi, KindBase, Outcomes
from controller.jobs.schema import crd as generic
from controller.jobs.schema.api import (
    MAX_REPLICAS,
    CleanUpPolicy,
    JobObject,
    JobPhase,
    Model,
    Outcome,
    RunMode,
    SchedulePolicy,
    Verdict,
)
from controller.jobs.schema.validation import (
    SpecError,
    duplicate_types,
    name_errors,
    no_replicas_errors,
    parse,
    run_mode_errors,
    template_errors,
)
from controller.jobs.testing import (
    FAILED,
    SUCCEEDED,
    ChaosJob,
    ChaosReplica,
    Judgement,
    ModelContract,
    chaos_script,
)
from controller.kinds import registry
from localcluster.testing import SCRIPT_ANNOTATION

from .conftest import QUICK, until

GROUP, VERSION, KIND, PLURAL = "batch.tensorstack.dev", "v1beta1", "ShellJob", "shelljobs"
RANK_ENV = "SHELLJOB_RANK"


# --- the kind -------------------------------------------------------------------------------------


class ShellReplicaSpec(Model):
    type: Annotated[str, Field(pattern=r"^[a-z]([-a-z0-9]*[a-z0-9])?$", max_length=32)] = Field(
        description="The type of the replica.")
    replicas: Annotated[int, Field(ge=0, le=MAX_REPLICAS)] = Field(1, description="Replicas of the type.")
    template: dict[str, Any] = Field(description="The pod of each replica.")


class ShellJobSpec(Model):
    replica_specs: Annotated[list[ShellReplicaSpec], Field(min_length=1)] = Field(description="The replicas.")
    clean_up_policy: CleanUpPolicy = Field(CleanUpPolicy.UNFINISHED, description="What to delete when finished.")
    run_mode: RunMode = Field(default_factory=RunMode, description="Debug or pause the job.")
    scheduler: SchedulePolicy | None = Field(None, description="The scheduler that dispatches the pods.")


class ShellJob(JobObject):
    spec: ShellJobSpec


class Never:
    """No finished replica is replaced."""

    limit = 0
    counts_lost_pods = False

    def can_restart(self, restart_count: int, job_restarts: int = 0) -> bool:
        return False

    def replaces(self, phase: str, restart_count: int, containers=(), job_restarts: int = 0) -> bool:
        return False

    def why_final(self, restart_count: int, containers=(), job_restarts: int = 0) -> tuple[bool, str]:
        return False, "(a ShellJob never restarts a replica)"


class ShellJobKind(KindBase[ShellJob]):
    api = KindApi(GROUP, VERSION, KIND, PLURAL, label_prefix="shelljob.batch.tensorstack.dev")
    status = TasksStatus("replicas")

    def parse(self, obj: dict) -> ShellJob | list[SpecError]:
        job = parse(obj, ShellJob)
        if not isinstance(job, ShellJob):
            return job
        return [*name_errors(job, self.api, services=False), *duplicate_types(job), *template_errors(job),
                *run_mode_errors(job), *no_replicas_errors([spec.replicas for spec in job.spec.replica_specs])] or job

    def crd(self) -> dict:
        spec = generic.structural(ShellJobSpec.model_json_schema(by_alias=True))
        item = spec["properties"]["replicaSpecs"]["items"]["properties"]
        item["template"] = generic.template_schema(item["template"]["description"])
        root = generic.job_schema("ShellJob: replicas that each run once.", spec,
                                  generic.status_schema(KIND, "replicas"), [])
        return generic.custom_resource(GROUP, VERSION, KIND, PLURAL, root, generic.job_columns())

    def restart_rule(self, job: ShellJob, replica_type: str) -> Never:
        return Never()

    def verdict(self, job: ShellJob, outcomes: Outcomes) -> Verdict | None:
        failed = sorted(key for key, outcome in outcomes.items() if outcome == Outcome.FAILED)
        if failed:
            return Verdict(JobPhase.FAILED, failed[0], f"Replica {failed[0][0]}-{failed[0][1]} has failed.",
                           replicas=tuple(failed))
        total = sum(self.replica_counts(job).values())
        if len(outcomes) == total and all(outcome == Outcome.SUCCEEDED for outcome in outcomes.values()):
            return Verdict(JobPhase.SUCCEEDED, None, "Every replica has succeeded.")
        return None

    def decorate_pod(self, job: ShellJob, replica_type: str, rank: int, index: int, pod_spec: dict,
                     override: Override | None) -> None:
        for container in pod_spec.get("containers") or ():
            container.setdefault("env", []).append({"name": RANK_ENV, "value": str(rank)})
        apply_override(override, pod_spec)


class ShellJobContract(ModelContract):
    """Its model contract (controller/jobs/testing.py): the spec's rules for the engine's model test, written from
    what the kind promises, not from its code: no replica is ever replaced (a lost pod is made again uncounted), the
    job fails with any replica and succeeds with every one, cleanUpPolicy at the spec's top."""

    kind = KIND

    def cleanup_policy(self, spec: dict) -> str:
        return spec.get("cleanUpPolicy") or "Unfinished"

    def set_cleanup(self, spec: dict, policy: str) -> None:
        spec.update(cleanUpPolicy=policy)

    def deadline(self, spec: dict) -> int | None:
        return None

    def judge(self, spec: dict, replica_type: str, phase: str, code: int | None, restarts: int,
              job_restarts: int) -> Judgement:
        return Judgement(False)

    def counts_lost(self, spec: dict, replica_type: str) -> bool:
        return False

    def verdict(self, spec: dict, outcomes: dict, removed_failed: list) -> str | None:
        present = self.replicas(spec)
        if removed_failed or any(outcomes.get(k) == "Failed" for k in present):
            return "Failed"
        return "Succeeded" if present and all(outcomes.get(k) == "Succeeded" for k in present) else None

    def draw(self, draw: Any, cleanup: str) -> dict:
        from hypothesis import strategies as st
        first = draw(st.integers(0, 2))
        types = [("a", first), ("b", draw(st.integers(0 if first else 1, 2)))]
        return self.job({"cleanUpPolicy": cleanup, "replicaSpecs": [
            {"type": t, "replicas": n, "template": self.template()} for t, n in types]})

    def chaos_job(self, rng: random.Random, name: str, mode: str) -> ChaosJob:
        """1 to 3 replicas of one type, each running once, succeeding or not: any failure is the job's (final, as
        every end is), so exactly one verdict is reachable."""
        replicas = [ChaosReplica("a", rank, f"{name}-a-{rank}", "Never", 0, [rng.random() < 0.8])
                    for rank in range(rng.randint(1, 3))]
        for replica in replicas:
            replica.outcome = SUCCEEDED if replica.attempts[0] else FAILED
        cleanup = rng.choice(["None", "Unfinished", "All"])
        body = self.job_named(name, {"cleanUpPolicy": cleanup, "replicaSpecs": [
            {"type": "a", "replicas": len(replicas), "template": self.template()}]})
        return ChaosJob(body, replicas, {r.name: chaos_script(rng, r.attempts[0]) for r in replicas},
                        FAILED if any(r.outcome == FAILED for r in replicas) else SUCCEEDED, cleanup)


SHELLJOB = ShellJobKind()
SHELLJOB.model_contract = ShellJobContract()  # type: ignore[attr-defined]  # (registry.model_contract finds it)
TEST_KINDS = {**registry.KINDS, KIND: SHELLJOB}  # the test registry: the build's kinds and this one


def shelljob(name: str, replicas: dict[str, int], script: dict | None = QUICK) -> dict:
    annotations = {SCRIPT_ANNOTATION: json.dumps(script)} if script is not None else {}
    template = {"metadata": {"annotations": annotations},
                "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "command": ["true"]}]}}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND,
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "generation": 1},
            "spec": {"replicaSpecs": [{"type": t, "replicas": n, "template": template} for t, n in replicas.items()]}}


# --- registered in the real registry: the engine's model test covers it ------------------------------------


@pytest.mark.slow  # the engine's model, 300 stories of ShellJobs (a minute)
@pytest.mark.timeout(600)
def test_registered_in_the_real_registry_the_engines_model_test_runs_it(monkeypatch):
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis.stateful import run_state_machine_as_test

    from tests.controller.model import job_strategy, shards

    monkeypatch.setitem(registry.KINDS, KIND, SHELLJOB)  # as one entry of registry.py would
    monkeypatch.setattr(job_strategy, "KINDS", {KIND: SHELLJOB})  # (its stories only)
    run_state_machine_as_test(shards.machine(1), settings=settings(
        max_examples=300, stateful_step_count=50, derandomize=True, database=None, deadline=None,
        phases=[Phase.explicit, Phase.generate], suppress_health_check=[HealthCheck.too_slow,
                                                                        HealthCheck.filter_too_much]))


def test_registered_in_the_real_registry_the_chaos_run_draws_it(monkeypatch):
    from tests.chaos.jobs import make_jobs

    monkeypatch.setitem(registry.KINDS, KIND, SHELLJOB)
    mine = [drawn for drawn in make_jobs(3, 60, share=1.0) if drawn.kind is SHELLJOB]  # the other kinds in turn
    assert mine and {drawn.expected for drawn in mine} == {"Succeeded", "Failed"}
    for drawn in mine:
        assert isinstance(SHELLJOB.parse(drawn.body), ShellJob)
        assert set(drawn.scripts) == {f"default/{r.name}" for r in drawn.replicas}


# --- parsed, validated, planned -------------------------------------------------------------------------


def test_the_test_registry_serves_the_fourth_kind_by_name_or_plural():
    assert registry.select(["shelljobs"], TEST_KINDS) == [SHELLJOB]
    assert registry.select(["ShellJob", "GenericJob"], TEST_KINDS) == [SHELLJOB, registry.KINDS["GenericJob"]]
    with pytest.raises(ValueError, match="unknown job kind ShellJob"):
        registry.select(["ShellJob"])  # the build's registry does not know it


def test_a_shelljob_is_parsed_and_its_problems_name_their_field():
    job = SHELLJOB.parse(shelljob("ok", {"worker": 2}))
    assert isinstance(job, ShellJob) and SHELLJOB.replica_counts(job) == {"worker": 2}
    bad = shelljob("bad", {"worker": 1, "Upper": 1})
    bad["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"] = []
    problems = SHELLJOB.parse(bad)
    assert isinstance(problems, list)
    assert {p.field for p in problems} == {"spec.replicaSpecs[1].type"}  # the model's error comes first
    bad["spec"]["replicaSpecs"].pop()
    assert [p.field for p in SHELLJOB.parse(bad)] == ["spec.replicaSpecs[0].template.spec.containers"]
    assert SHELLJOB.invalid_spec_message(SHELLJOB.parse(bad)).startswith("spec.replicaSpecs[0].template.spec")


def test_the_engine_plans_a_shelljob_with_the_kinds_defaults():
    job = SHELLJOB.parse(shelljob("p", {"worker": 2, "ps": 1}))
    first = plan(SHELLJOB, job, {}, [], "2026-01-01T00:00:00Z")
    assert first.create == [CreatePod("worker", 0, "immediate"), CreatePod("worker", 1, "immediate"),
                            CreatePod("ps", 0, "immediate")]
    assert first.services == [] and first.dependents == [] and first.podgroup == []  # no ports, no dependents
    pod = desired_pod(SHELLJOB, job, "worker", 1)
    assert pod["metadata"]["labels"]["shelljob.batch.tensorstack.dev/rank"] == "1"
    assert {"name": RANK_ENV, "value": "1"} in pod["spec"]["containers"][0]["env"]
    assert [task["type"] for task in first.status["tasks"]] == ["worker", "ps"]


def test_its_crd_is_generated_from_the_kind():
    files = registry.crd_files([SHELLJOB])
    assert list(files) == ["shelljob.yaml"]
    assert "ShellJob: replicas that each run once." in files["shelljob.yaml"]


# --- run on localcluster ----------------------------------------------------------------------------------


@pytest.fixture
async def shell_controller(cluster, rest_client, config, tmp_path):
    (tmp_path / "shelljob.yaml").write_text(registry.crd_files([SHELLJOB])["shelljob.yaml"])
    assert cluster.apply_crds(tmp_path) == [f"{PLURAL}.{GROUP}"]
    made = registry.make_controller(rest_client, config, CollectorRegistry(), registry.select([KIND], TEST_KINDS))
    await made.start(sync_timeout=10)
    yield made
    await made.stop()


async def test_a_shelljob_runs_to_success_on_localcluster(cluster, api_client, shell_controller):
    custom, core = client.CustomObjectsApi(api_client), client.CoreV1Api(api_client)
    job = shelljob("hello", {"worker": 2, "ps": 1})
    del job["metadata"]["uid"], job["metadata"]["generation"]
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, job)

    async def finished():
        got = await custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "hello")
        return got if (got.get("status") or {}).get("phase") in (JobPhase.SUCCEEDED, JobPhase.FAILED) else None

    done = await until(finished, timeout=20, what="the ShellJob finished")
    assert done["status"]["phase"] == JobPhase.SUCCEEDED
    assert {r["name"]: r["phase"] for t in done["status"]["tasks"] for r in t["replicas"]} == {
        "hello-worker-0": "Succeeded", "hello-worker-1": "Succeeded", "hello-ps-0": "Succeeded"}
    pods = (await core.list_namespaced_pod("default", label_selector="shelljob.batch.tensorstack.dev/name=hello")).items
    assert sorted(pod.metadata.name for pod in pods) == ["hello-ps-0", "hello-worker-0", "hello-worker-1"]
    assert all(pod.metadata.owner_references[0].kind == KIND for pod in pods)
