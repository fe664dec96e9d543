"""What the manifests tests share: the rendered install, the RBAC helpers, the Dockerfile's stages."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import importlib.util
import pickle
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from kubernetes_asyncio import client, config

from controller.jobs.children.podgroup import GROUP as PG_GROUP
from controller.jobs.children.podgroup import PLURAL as PG_PLURAL
from controller.kinds import registry
from controller.kinds.genericjob.models import GROUP, PLURAL, VERSION
from localcluster import ApiError
from localcluster.testing import ENV, TIMEOUT, kubectl_binary
from tests.e2e.conftest import LABEL_JOB_NAME, MERGE, phase
from tests.slow import starts_processes

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
NAMESPACE = "genericjob-system"
IMAGE = "ghcr.io/t9k/genericjob-controller:0.1.0"
NAME = "genericjob-controller"
# The controller's own roles (user-rbac.yaml adds user-facing ClusterRoles next to them), whose rules the RBAC test
# compares with the requests the controller makes; the webhook's certificates have a Role and a ClusterRole of
# their own (WEBHOOK_RBAC), by resource name.
ROLES = {"ClusterRole": NAME, "Role": f"{NAME}-leader-election"}
WEBHOOK = f"{NAME}-webhook"  # the webhook's Service, and its certificates' Role and ClusterRole
WEBHOOK_SECRET = f"{NAME}-webhook-cert"  # the self-managed certificates' Secret (--webhook-secret-name)
WEBHOOK_PORT = 9443

# What `kubectl kustomize manifests/` must produce: (kind, name) -> namespaced?
EXPECTED = {
    ("Namespace", NAMESPACE): False,
    ("CustomResourceDefinition", f"{PLURAL}.{GROUP}"): False,
    ("CustomResourceDefinition", f"tensorflowtrainingjobs.{GROUP}"): False,
    ("CustomResourceDefinition", f"pytorchtrainingjobs.{GROUP}"): False,
    ("CustomResourceDefinition", f"mpijobs.{GROUP}"): False,
    ("CustomResourceDefinition", f"{PG_PLURAL}.{PG_GROUP}"): False,
    ("ServiceAccount", NAME): True,
    ("ClusterRole", NAME): False,
    ("ClusterRoleBinding", NAME): False,
    ("Role", f"{NAME}-leader-election"): True,
    ("RoleBinding", f"{NAME}-leader-election"): True,
    ("ClusterRole", "genericjob-metrics-reader"): False,
    ("ClusterRole", "genericjob-edit"): False,
    ("ClusterRole", "genericjob-view"): False,
    ("Deployment", NAME): True,
    ("PodDisruptionBudget", NAME): True,
    ("Service", f"{NAME}-metrics"): True,
    ("Service", WEBHOOK): True,
    ("ValidatingWebhookConfiguration", NAME): False,
    ("Role", WEBHOOK): True,
    ("RoleBinding", WEBHOOK): True,
    ("ClusterRole", WEBHOOK): False,
    ("ClusterRoleBinding", WEBHOOK): False,
}
METRICS_PORT = 8443


# --- YAML, parsed once ----------------------------------------------------------------------------
# Every rendering holds the CRDs (three quarters of a megabyte of YAML, each embedding a pod template), and the
# tests render the install dozens of times: PyYAML's pure-Python parser took most of these tests' time. libyaml's
# parser (PyYAML's CSafeLoader: the same safe constructors) parses each distinct document once per process; a
# caller gets its own copy (unpickled), so that no test sees another's edits.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# A line `---` is a document start wherever it is (PyYAML's scanner checks for it at column 0 before anything else),
# so cutting the stream there gives the documents safe_load_all gives.
_DOCUMENT_START = re.compile(r"^---[ \t]*(?:\n|\Z)", re.MULTILINE)


@functools.lru_cache(maxsize=512)
def _parsed(chunk: str) -> bytes:
    return pickle.dumps([doc for doc in yaml.load_all(chunk, Loader=_LOADER) if doc is not None])


def documents(text: str) -> list:
    """The documents of a YAML stream, as `yaml.safe_load_all` reads them, empty ones left out."""
    return [doc for chunk in _DOCUMENT_START.split(text) for doc in pickle.loads(_parsed(chunk))]


def load_file(path: Path) -> list:
    """documents() of a file."""
    return documents(path.read_text())


@functools.lru_cache(maxsize=64)
def _kustomized(path: str) -> str:
    out = subprocess.run([str(kubectl_binary()), "kustomize", path], capture_output=True, text=True, env=ENV,
                         timeout=TIMEOUT)
    assert out.returncode == 0, f"kubectl kustomize {path} failed:\n{out.stderr}"
    return out.stdout


def render(path: Path) -> list[dict]:
    """`kubectl kustomize path`'s objects. The repository's own directories are rendered once per process (no test
    changes them); any other (a copy a test made and edited) each time it is asked for."""
    if path.resolve().is_relative_to(ROOT):
        return documents(_kustomized(str(path.resolve())))
    return documents(_kustomized.__wrapped__(str(path)))


def kustomize() -> list[dict]:
    return render(MANIFESTS)


@pytest.fixture(scope="module")
@starts_processes
def rendered() -> list[dict]:
    return kustomize()


def kind_lists_script() -> ModuleType:
    """scripts/sync_kind_lists.py, which writes every list of the kinds from the registry."""
    spec = importlib.util.spec_from_file_location("sync_kind_lists", ROOT / "scripts" / "sync_kind_lists.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def registry_install(directory: Path) -> Path:
    """A copy of manifests/ in `directory` as `make generate` writes it for the registry as it is now (a kind a test
    registers among them): every kind's CRD in crds/, every list of the kinds (kustomize's, the RBAC rules, the
    webhooks) from the registry. Its path; render() it."""
    copied = directory / "manifests"
    shutil.copytree(MANIFESTS, copied)
    for name in (copied / "crds").glob("*.yaml"):
        name.unlink()
    for name, text in registry.crd_files().items():
        (copied / "crds" / name).write_text(text)
    for name, text in kind_lists_script().generated().items():
        if name.startswith("manifests/"):
            (directory / name).write_text(text)
    return copied


def find(objects: list[dict], kind: str, name: str | None = None) -> dict:
    [found] = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    return found



def resource_rules(role: dict) -> set[tuple[str, str, str, str | None]]:
    """(apiGroup, resource, verb, resourceName or None) of a role's rules."""
    return {(g, r, v, n) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
            for v in rule["verbs"] for n in rule.get("resourceNames") or [None]}


Rule = tuple[str, str, str]  # (apiGroup, resource, verb)


def apply_rbac(cluster, objects: list[dict]) -> None:
    """Create the manifests' RBAC objects inside localcluster (not over HTTP: the requests counted are
    then the controller's alone)."""
    cluster.api.ensure_namespace(NAMESPACE)
    for obj in objects:
        if obj["kind"] in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"):
            rt = cluster.registry.by_kind(obj["apiVersion"], obj["kind"])
            cluster.api.create(rt, obj["metadata"].get("namespace"), copy.deepcopy(obj))


@contextlib.asynccontextmanager
async def service_account_client(cluster):
    """A kubernetes_asyncio client authenticating with a token of the manifests' ServiceAccount."""
    cluster.api.ensure_namespace(NAMESPACE)
    token = cluster.service_account_token(NAMESPACE, NAME)
    configuration = client.Configuration()
    await config.load_kube_config_from_dict(cluster.kubeconfig(token=token), client_configuration=configuration)
    async with client.ApiClient(configuration) as api:
        yield api


def refused(cluster) -> dict:
    return {key: n for key, n in cluster.faults.requests.items() if key[2] in (401, 403) and n}


def rules_of(role: dict) -> set[Rule]:
    allowed = set()
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}, f"unexpected rule fields (resourceNames?): {rule}"
        for field in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[field], f"wildcard in {role['kind']} {field}: {rule}"
        allowed |= {(g, r, v) for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    return allowed



class InProcess:
    """The test's own reads and writes, made inside localcluster instead of over HTTP: every request
    the server counts is then the controller's (or its leader elector's)."""

    def __init__(self, cluster) -> None:
        self.api = cluster.api
        self.store = cluster.store
        self.jobs = cluster.registry.get(GROUP, VERSION, PLURAL)
        self.pod_type = cluster.registry.get("", "v1", "pods")

    def submit(self, job: dict) -> dict:
        return self.api.create(self.jobs, "default", copy.deepcopy(job))

    def job(self, name: str) -> dict | None:
        try:
            return self.api.get(self.jobs, "default", name)
        except ApiError as err:
            if err.code == 404:
                return None
            raise

    def patch(self, name: str, body: dict) -> None:
        self.api.patch(self.jobs, "default", name, MERGE, body)

    def delete(self, name: str) -> None:
        self.api.delete(self.jobs, "default", name, {"propagationPolicy": "Background"})

    def force_delete_pod(self, name: str) -> None:
        """`kubectl delete pod --force --grace-period=0`: gone at once, whatever its kubelet says."""
        _, gone = self.api.delete(self.pod_type, "default", name, {"gracePeriodSeconds": 0})
        assert gone

    def children(self, group: str, plural: str, job: str) -> list[dict]:
        return [o for o in self.store.objects((group, plural), "default")
                if (o["metadata"].get("labels") or {}).get(LABEL_JOB_NAME) == job
                or any(r.get("name") == job and r.get("kind") == "GenericJob"
                       for r in o["metadata"].get("ownerReferences") or ())]

    def pods(self, job: str) -> list[dict]:
        return self.children("", "pods", job)

    def services(self, job: str) -> list[dict]:
        return self.children("", "services", job)

    def podgroups(self, job: str) -> list[dict]:
        return self.children(PG_GROUP, PG_PLURAL, job)

    def events(self, job: str) -> list[dict]:
        return [e for e in self.store.objects(("", "events"), "default") if e["involvedObject"]["name"] == job]

    async def wait(self, what: str, check, timeout: float = 15.0):
        last = None
        try:
            async with asyncio.timeout(timeout):
                while True:
                    last = check()
                    if last:
                        return last
                    await asyncio.sleep(0.02)
        except TimeoutError:
            pytest.fail(f"{what}: not reached in {timeout}s (last: {last!r})")

    async def wait_phase(self, name: str, wanted: str) -> dict:
        return await self.wait(f"job {name} {wanted}", lambda: (j := self.job(name)) and phase(j) == wanted and j)




def dockerfile_stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile as stages of (INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    lines, current = [], ""
    for raw in (ROOT / "Dockerfile").read_text().splitlines():
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        current += " " + stripped.removesuffix("\\").strip()
        if not stripped.endswith("\\"):
            lines.append(current.strip())
            current = ""
    assert not current, "the Dockerfile ends inside a continued line"
    stages: list[list[tuple[str, str]]] = []
    for line in lines:
        instruction, _, args = line.partition(" ")
        if instruction.upper() == "FROM":
            stages.append([])
        assert stages, f"instruction before the first FROM: {line}"
        stages[-1].append((instruction.upper(), args.strip()))
    return stages


def args_of(stage: list[tuple[str, str]], instruction: str) -> list[str]:
    return [args for name, args in stage if name == instruction]
