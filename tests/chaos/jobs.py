"""The chaos run's workload: seeded jobs of every kind (GenericJobs, and TensorFlowTrainingJobs and
PyTorchTrainingJobs among them) whose outcome is computable from their pods' scripts.

Every pod follows a per-attempt script, set by pod name through `POST /_localcluster/scripts`
(localcluster's scripted runner counts attempts per pod name), so the oracle below knows, for each
replica, the outcome it comes to for good and how many restarts that takes. Rules are drawn so that
exactly one verdict is reachable: outcomes for good are final, so the job's phase does not depend
on the order in which replicas finish. A TensorFlowTrainingJob succeeds with its master and fails
with any replica failing for good, which is order-dependent unless only the master can fail: its
other replicas' scripts end in success (OnFailure, no backoffLimit: restarted until they do). A
PyTorchTrainingJob is drawn the same way (its master: `master`-0, else worker-0), with a backoffLimit far
above the restarts drawn (its default is 3).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from tests.builders import PYTORCH as PYTORCH_KIND
from tests.builders import TENSORFLOW as TENSORFLOW_KIND
from tests.builders import JobBuilder

SUCCEEDED, FAILED = "Succeeded", "Failed"
NORMAL, PAUSE, DEBUG = "normal", "pause", "debug"
GENERICJOB, TENSORFLOW, PYTORCH = "genericjobs", "tensorflowtrainingjobs", "pytorchtrainingjobs"  # by plural
LABELS = {GENERICJOB: "genericjob.batch.tensorstack.dev/name",
          TENSORFLOW: "tensorflowtrainingjob.batch.tensorstack.dev/name",
          PYTORCH: "pytorchtrainingjob.batch.tensorstack.dev/name"}
# where each kind keeps its replica records
RECORDS = {GENERICJOB: "replicas", TENSORFLOW: "replicaStatus", PYTORCH: "replicas"}
SHORT = {GENERICJOB: "genericjob", TENSORFLOW: "tensorflow", PYTORCH: "pytorch"}  # the report's names
UNLIMITED = 99  # a TensorFlowTrainingJob without backoffLimit: the restarts the oracle allows


@dataclass
class Replica:
    type: str
    rank: int
    name: str
    policy: str
    limit: int
    attempts: list[bool]  # scripted success of attempt 0, 1, ... (the last repeats)
    outcome: str = ""  # what the replica comes to for good
    restarts: int = 0  # the restarts it takes to get there

    def succeeds(self, attempt: int) -> bool:
        return self.attempts[min(attempt, len(self.attempts) - 1)]


@dataclass
class JobPlan:
    name: str
    kind: str
    body: dict
    replicas: list[Replica]
    cleanup: str
    expected: str  # Succeeded, Failed, or Running (debug)
    plural: str = GENERICJOB  # the job's kind
    pause_at: float = 0.0  # seconds after submission (pause jobs)
    resume_after: float = 0.0
    policies: dict[str, tuple[str, int]] = field(default_factory=dict)
    scripts: dict[str, dict | list] = field(default_factory=dict)  # "namespace/pod" -> script (POST scripts)

    def replica(self, name: str) -> Replica | None:
        return next((r for r in self.replicas if r.name == name), None)

    @property
    def label(self) -> str:
        """The label naming the job on its pods and Services."""
        return LABELS[self.plural]

    def records(self, job: dict) -> list[dict]:
        return [r for t in (job.get("status") or {}).get("tasks") or () for r in t.get(RECORDS[self.plural]) or ()]


def simulate(policy: str, limit: int, succeeds) -> tuple[str, int]:
    """(outcome for good, restarts) of a replica whose attempt i succeeds iff succeeds(i)."""
    restarts = 0
    while True:
        ok = succeeds(restarts)
        if policy == "Never":
            return (SUCCEEDED if ok else FAILED), 0
        if policy == "OnFailure" and ok:
            return SUCCEEDED, restarts
        if restarts < limit:
            restarts += 1
            continue
        return (SUCCEEDED if ok else FAILED), restarts


def verdicts(replicas: list[Replica], success_rules: list[dict], failure_rules: list[dict]) -> tuple[bool, bool]:
    """(some success rule is met, some failure rule is met) once every replica has its outcome."""
    outcome = {(r.type, r.rank): r.outcome for r in replicas}

    def met(rule: dict, wanted: str) -> bool:
        return all(outcome.get((t, int(k))) == wanted for t, ranks in rule.items() for k in ranks)

    failed = any(met(r, FAILED) for r in failure_rules) if failure_rules else FAILED in outcome.values()
    succeeded = (any(met(r, SUCCEEDED) for r in success_rules) if success_rules
                 else all(o == SUCCEEDED for o in outcome.values()))
    return succeeded, failed


def _script(rng: random.Random, ok: bool) -> dict:
    return {"start_after": round(rng.uniform(0.01, 0.15), 3), "run_for": round(rng.uniform(0.15, 1.2), 3),
            "exit_code": 0 if ok else 1}


TF_SHARE = 0.3  # of the normal jobs, the share that are training jobs (TensorFlow, then PyTorch, half each)


def make_job(rng: random.Random, index: int, tf_share: float = TF_SHARE) -> JobPlan:
    name = f"chaos-{index:03d}"
    kind = rng.choices([NORMAL, PAUSE, DEBUG], weights=[75, 15, 10])[0]
    if tf_share and kind == NORMAL and rng.random() < tf_share:  # no draw at 0: the GenericJob-only plans
        return make_tensorflow_job(rng, name) if index % 2 == 0 else make_pytorch_job(rng, name)
    types = {"worker": rng.randint(1, 3)}
    if rng.random() < 0.4:
        types = {"master": 1, **types}
    cleanup = rng.choice(["None", "Unfinished", "All"])
    spec: dict = {"cleanUpPolicy": cleanup}
    if rng.random() < 0.3:
        spec["service"] = {"ports": [{"name": "http", "port": 8080}]}
    if rng.random() < 0.3:
        spec["scheduler"] = {"t9kScheduler": {"queue": "default", "priority": rng.randint(0, 100)}}
    policies = {}
    for t in types:
        if kind == PAUSE:
            policies[t] = ("Never", 0)
        else:
            policies[t] = (rng.choice(["Never", "OnFailure", "OnFailure", "Always"]), rng.randint(0, 3))

    for _ in range(50):
        replicas, scripts = [], {}
        for t, count in types.items():
            policy, limit = policies[t]
            for rank in range(count):
                pod = f"{name}-{t}-{rank}"
                if kind == DEBUG:
                    attempts, script = [True], {}  # runs until deleted
                elif kind == PAUSE:
                    ok = rng.random() < 0.85
                    attempts, script = [ok], _script(rng, ok)  # every attempt alike: pause and resume are moot
                else:
                    attempts = [rng.random() < 0.6 for _ in range(limit + 1)]
                    script = [_script(rng, ok) for ok in attempts]
                replica = Replica(t, rank, pod, policy, limit, attempts)
                replica.outcome, replica.restarts = simulate(policy, limit, replica.succeeds)
                replicas.append(replica)
                scripts[(t, rank)] = script
        success_rules: list[dict] = []
        failure_rules: list[dict] = []
        if kind == NORMAL and rng.random() < 0.45:
            pick = rng.choice(replicas)
            success_rules = [{pick.type: [pick.rank]}]
            if rng.random() < 0.5:
                other = rng.choice(replicas)
                failure_rules = [{other.type: [str(other.rank)]}]
        succeeded, failed = verdicts(replicas, success_rules, failure_rules)
        if kind == DEBUG or succeeded != failed:
            break
    else:  # no draw gave exactly one verdict: make every replica succeed
        success_rules = failure_rules = []
        for r in replicas:
            r.attempts, r.outcome, r.restarts = [True], SUCCEEDED, (r.limit if r.policy == "Always" else 0)
            scripts[(r.type, r.rank)] = [_script(rng, True)]
        succeeded = True
    expected = "Running" if kind == DEBUG else SUCCEEDED if succeeded else FAILED

    replica_specs = []
    for t, count in types.items():
        policy, limit = policies[t]
        replica_specs.append({
            "type": t, "replicas": count, "restartPolicy": {"policy": policy, "limit": limit},
            "template": {"spec": {"containers": [{"name": "main", "image": "busybox:1.36",
                                                  "command": ["sh", "-c", "echo $(type) $(rank)"]}]}}})
    if success_rules:
        spec["successRules"] = success_rules
    if failure_rules:
        spec["failureRules"] = failure_rules
    if kind == DEBUG:
        spec["runMode"] = {"debug": {"enabled": True}}
    body = JobBuilder(name).spec(replicaSpecs=replica_specs, **spec).obj()
    plan = JobPlan(name, kind, body, replicas, cleanup, expected, policies=policies,
                   scripts={f"default/{name}-{t}-{rank}": script for (t, rank), script in scripts.items()})
    if kind == PAUSE:
        plan.pause_at, plan.resume_after = rng.uniform(0.1, 0.8), rng.uniform(0.3, 1.5)
    return plan


def make_tensorflow_job(rng: random.Random, name: str) -> JobPlan:
    """A TensorFlowTrainingJob: workers and maybe a chief; only the master may fail for good (Never and a
    failing script), every other replica ends in success (restarted under OnFailure until it does)."""
    types = {"chief": 1, "worker": rng.randint(1, 3)} if rng.random() < 0.4 else {"worker": rng.randint(1, 3)}
    master = ("chief", 0) if "chief" in types else ("worker", 0)
    return _training_job(rng, name, TENSORFLOW, types, master, "tensorflow", {})


def make_pytorch_job(rng: random.Random, name: str) -> JobPlan:
    """A PyTorchTrainingJob, drawn as a TensorFlowTrainingJob with `master` for the chief; its backoffLimit
    (default 3) set far above the restarts drawn, as the TensorFlowTrainingJob's unset one."""
    types = {"master": 1, "worker": rng.randint(1, 3)} if rng.random() < 0.5 else {"worker": rng.randint(1, 3)}
    master = ("master", 0) if "master" in types else ("worker", 0)
    return _training_job(rng, name, PYTORCH, types, master, "pytorch", {"backoffLimit": UNLIMITED})


def _training_job(rng: random.Random, name: str, plural: str, types: dict[str, int], master: tuple[str, int],
                  container: str, run_policy: dict) -> JobPlan:
    cleanup = rng.choice(["None", "Unfinished", "All"])
    policies = {t: ("OnFailure", UNLIMITED) if rng.random() < 0.6 else ("Never", 0) for t in types}
    replicas, scripts = [], {}
    for t, count in types.items():
        policy, limit = policies[t]
        for rank in range(count):
            if policy == "OnFailure":
                attempts = [*[False] * rng.randint(0, 2), True]  # fails a few times, then succeeds
            else:
                attempts = [rng.random() < 0.6 if (t, rank) == master else True]
            replica = Replica(t, rank, f"{name}-{t}-{rank}", policy, limit, attempts)
            replica.outcome, replica.restarts = simulate(policy, limit, replica.succeeds)
            replicas.append(replica)
            scripts[(t, rank)] = [_script(rng, ok) for ok in attempts]
    succeeded = next(r for r in replicas if (r.type, r.rank) == master).outcome == SUCCEEDED
    pod = {"spec": {"containers": [{"name": container, "image": f"{container}/{container}:latest",
                                    "command": ["python", "train.py"]}]}}
    job = JobBuilder(name, kind=TENSORFLOW_KIND if plural == TENSORFLOW else PYTORCH_KIND)
    for t, count in types.items():
        job = job.replica(t, count, template=pod, restart_policy=policies[t][0])
    job = job.spec(runPolicy={"cleanUpPolicy": cleanup, **run_policy})
    if rng.random() < 0.3:
        job = job.spec(scheduler={"t9kScheduler": {"queue": "default", "priority": rng.randint(0, 100)}})
    body = job.obj()
    return JobPlan(name, NORMAL, body, replicas, cleanup, SUCCEEDED if succeeded else FAILED, plural=plural,
                   policies=policies,
                   scripts={f"default/{name}-{t}-{rank}": script for (t, rank), script in scripts.items()})


def make_jobs(seed: int, count: int, tf_share: float = TF_SHARE) -> list[JobPlan]:
    rng = random.Random(seed)
    return [make_job(rng, index, tf_share) for index in range(count)]
