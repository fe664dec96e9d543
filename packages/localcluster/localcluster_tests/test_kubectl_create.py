"""kubectl's `create` generators, `run` and `expose` against localcluster, with the installed kubectl 1.35.

kubectl sends these objects as protobuf (but `run` and `expose`, JSON). The oracle for what localcluster
decodes is kubectl itself: `--dry-run=client -o json` prints Go's JSON of the very object the real command
then sends, so the body the server decoded must equal it exactly. Each object is then read back with
`kubectl get -o json`.
"""

from __future__ import annotations

import copy
import json

import pytest

from localcluster.endpoints import protobuf
from localcluster.testing import Kubectl, starts_processes

NS = "team-a"


@pytest.fixture
def decoded(monkeypatch) -> list[dict]:
    """Every protobuf body the server decodes, as it decoded it."""
    seen: list[dict] = []
    real = protobuf.decode

    def recording(raw: bytes, api_version: str, kind: str) -> dict:
        obj = real(raw, api_version, kind)
        seen.append(copy.deepcopy(obj))  # as decoded, before the server defaults it
        return obj

    monkeypatch.setattr(protobuf, "decode", recording)
    return seen


@pytest.fixture
@starts_processes
async def kubectl(cluster, tmp_path) -> Kubectl:
    kubectl = Kubectl(cluster, tmp_path)
    await kubectl.ok("create", "namespace", NS)
    await kubectl.ok("create", "deployment", "web", "--image=nginx:1.27", "-n", NS, "--port=80")
    await kubectl.ok("run", "box", "--image=busybox", "-n", NS, "--labels=app=box", "--port=8080")
    return kubectl


async def created(kubectl: Kubectl, decoded: list[dict], *args: str, sends_protobuf: bool = True) -> dict:
    """Run a create command; check the body it sent decoded to the object `--dry-run=client` prints."""
    flags, dash, command = _split(args)
    expected = json.loads((await kubectl.ok(*flags, "--dry-run=client", "-o", "json", *dash, *command)).out)
    decoded.clear()
    await kubectl.ok(*args)
    # One protobuf body, read exactly as kubectl's Go JSON of it (`run` and `expose` send JSON instead).
    assert decoded == ([expected] if sends_protobuf else [])
    return expected


def _split(args: tuple[str, ...]) -> tuple[list[str], list[str], list[str]]:
    """kubectl's flags, and the container command after `--`."""
    if "--" not in args:
        return list(args), [], []
    at = args.index("--")
    return list(args[:at]), ["--"], list(args[at + 1:])


async def stored(kubectl: Kubectl, *what: str) -> dict:
    return json.loads((await kubectl.ok("get", *what, "-n", NS, "-o", "json")).out)


def within(sent, kept) -> bool:
    """Whether everything kubectl sent is in the stored object (which has the server's defaults on top)."""
    if isinstance(sent, dict):
        return isinstance(kept, dict) and all(within(v, kept.get(k)) for k, v in sent.items())
    if isinstance(sent, list):
        return isinstance(kept, list) and len(sent) == len(kept) and all(map(within, sent, kept))
    return sent == kept


async def check(kubectl: Kubectl, decoded: list[dict], *args: str, get: tuple[str, ...],
                sends_protobuf: bool = True) -> dict:
    sent = await created(kubectl, decoded, *args, sends_protobuf=sends_protobuf)
    obj = await stored(kubectl, *get)
    sent["metadata"].setdefault("namespace", obj["metadata"].get("namespace"))
    assert within({k: v for k, v in sent.items() if k != "status"}, obj), (sent, obj)
    assert obj["metadata"]["uid"] and obj["metadata"]["resourceVersion"]
    return obj


# --- core/v1 ------------------------------------------------------------------------------------


async def test_create_namespace(kubectl, decoded):
    obj = await check(kubectl, decoded, "create", "namespace", "team-b", get=("namespace", "team-b"))
    assert obj["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-b"}
    assert obj["status"] == {"phase": "Active"}
    again = await kubectl.run("create", "namespace", "team-b")
    assert (again.code, again.err) == (1, 'Error from server (AlreadyExists): namespaces "team-b" already exists\n')


async def test_create_configmap_from_literals_and_files(kubectl, decoded, tmp_path):
    obj = await check(kubectl, decoded, "create", "configmap", "settings", "-n", NS, "--from-literal=mode=fast",
                      "--from-literal=level=3", get=("configmap", "settings"))
    assert obj["data"] == {"mode": "fast", "level": "3"}
    (tmp_path / "app.conf").write_text("port = 8080\n")
    (tmp_path / "logo.bin").write_bytes(b"\x89PNG\x00\xff")
    obj = await check(kubectl, decoded, "create", "configmap", "files", "-n", NS,
                      f"--from-file={tmp_path / 'app.conf'}", f"--from-file=logo={tmp_path / 'logo.bin'}",
                      get=("configmap", "files"))
    assert obj["data"] == {"app.conf": "port = 8080\n"}
    assert obj["binaryData"] == {"logo": "iVBORwD/"}  # bytes travel raw in protobuf, base64 in JSON
    again = await kubectl.run("create", "configmap", "settings", "-n", NS, "--from-literal=mode=slow")
    # kubectl's own wording around the server's AlreadyExists, as against any server
    assert again.err == 'error: failed to create configmap: configmaps "settings" already exists\n'
    missing = await kubectl.run("create", "configmap", "settings", "-n", "nowhere")
    assert missing.err == 'error: failed to create configmap: namespaces "nowhere" not found\n'


async def test_create_secret_generic_and_docker_registry(kubectl, decoded):
    obj = await check(kubectl, decoded, "create", "secret", "generic", "token", "-n", NS, "--from-literal=key=s3cret",
                      get=("secret", "token"))
    assert (obj["type"], obj["data"]) == ("Opaque", {"key": "czNjcmV0"})
    obj = await check(kubectl, decoded, "create", "secret", "docker-registry", "pull", "-n", NS,
                      "--docker-server=registry.example.com", "--docker-username=u", "--docker-password=p",
                      get=("secret", "pull"))
    assert obj["type"] == "kubernetes.io/dockerconfigjson"
    assert json.loads(__import__("base64").b64decode(obj["data"][".dockerconfigjson"])) == {
        "auths": {"registry.example.com": {"username": "u", "password": "p", "auth": "dTpw"}}}


async def test_create_serviceaccount(kubectl, decoded):
    await check(kubectl, decoded, "create", "serviceaccount", "robot", "-n", NS, get=("serviceaccount", "robot"))


async def test_create_quota(kubectl, decoded):
    obj = await check(kubectl, decoded, "create", "quota", "small", "-n", NS, "--hard=pods=10,cpu=2,memory=1Gi",
                      get=("resourcequota", "small"))
    assert obj["spec"]["hard"] == {"cpu": "2", "memory": "1Gi", "pods": "10"}  # Quantities, as strings


async def test_run_a_pod(kubectl, decoded):
    obj = await check(kubectl, decoded, "run", "web-1", "-n", NS, "--image=nginx:1.27", "--port=80",
                      "--labels=app=web,tier=front", "--env=MODE=fast", "--", "nginx", "-g", "daemon off;",
                      get=("pod", "web-1"), sends_protobuf=False)
    container = obj["spec"]["containers"][0]
    assert (container["image"], container["args"], container["env"]) == (
        "nginx:1.27", ["nginx", "-g", "daemon off;"], [{"name": "MODE", "value": "fast"}])
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert obj["metadata"]["labels"] == {"app": "web", "tier": "front"}
    assert obj["status"]["phase"] == "Pending"


async def test_expose_a_pod_and_a_deployment(kubectl, decoded):
    obj = await check(kubectl, decoded, "expose", "pod", "box", "-n", NS, "--port=80", "--target-port=8080",
                      get=("service", "box"), sends_protobuf=False)
    assert obj["spec"]["selector"] == {"app": "box"}
    assert obj["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 8080}]
    assert obj["spec"]["clusterIP"] and obj["spec"]["type"] == "ClusterIP"
    obj = await check(kubectl, decoded, "expose", "deployment", "web", "-n", NS, "--name=web-http", "--port=8000",
                      "--target-port=http", get=("service", "web-http"), sends_protobuf=False)
    assert obj["spec"]["ports"][0]["targetPort"] == "http"  # an IntOrString sent as its string form
    assert obj["spec"]["selector"] == {"app": "web"}


# --- workloads ----------------------------------------------------------------------------------


async def test_create_deployment(kubectl, decoded):
    obj = await check(kubectl, decoded, "create", "deployment", "api", "-n", NS, "--image=nginx:1.27",
                      "--image=busybox", "--replicas=3", "--port=8080", get=("deployment", "api"))
    assert obj["spec"]["replicas"] == 3
    assert [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]] == ["nginx", "busybox"]


async def test_create_job(kubectl, decoded):
    obj = await check(kubectl, decoded, "create", "job", "once", "-n", NS, "--image=busybox", "--", "echo", "hi",
                      get=("job", "once"))
    spec, uid = obj["spec"], obj["metadata"]["uid"]
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert spec["template"]["spec"]["containers"][0]["command"] == ["echo", "hi"]
    # The job strategy's generated selector and labels, and SetDefaults_Job.
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert spec["template"]["metadata"]["labels"] == {
        "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "once",
        "controller-uid": uid, "job-name": "once"}
    assert {k: spec[k] for k in ("backoffLimit", "completions", "parallelism", "completionMode", "suspend",
                                 "manualSelector", "podReplacementPolicy")} == {
        "backoffLimit": 6, "completions": 1, "parallelism": 1, "completionMode": "NonIndexed", "suspend": False,
        "manualSelector": False, "podReplacementPolicy": "TerminatingOrFailed"}
    await kubectl.ok("create", "cronjob", "nightly", "-n", NS, "--image=busybox", "--schedule=0 3 * * *")
    obj = await check(kubectl, decoded, "create", "job", "manual", "-n", NS, "--from=cronjob/nightly",
                      get=("job", "manual"))
    assert obj["metadata"]["annotations"] == {"cronjob.kubernetes.io/instantiate": "manual"}
    assert obj["metadata"]["ownerReferences"][0]["kind"] == "CronJob"


async def test_create_cronjob(kubectl, decoded):
    obj = await check(kubectl, decoded, "create", "cronjob", "every5", "-n", NS, "--image=busybox",
                      "--schedule=*/5 * * * *", "--restart=Never", "--", "date", get=("cronjob", "every5"))
    spec = obj["spec"]
    assert spec["schedule"] == "*/5 * * * *"
    assert {k: spec[k] for k in ("concurrencyPolicy", "suspend", "successfulJobsHistoryLimit",
                                 "failedJobsHistoryLimit")} == {
        "concurrencyPolicy": "Allow", "suspend": False, "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1}
    assert spec["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] == "Never"


async def test_create_poddisruptionbudget(kubectl, decoded):
    obj = await check(kubectl, decoded, "create", "poddisruptionbudget", "keep-one", "-n", NS, "--selector=app=web",
                      "--min-available=50%", get=("pdb", "keep-one"))
    assert obj["spec"] == {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}
    obj = await check(kubectl, decoded, "create", "pdb", "lose-one", "-n", NS, "--selector=app=web",
                      "--max-unavailable=1", get=("pdb", "lose-one"))
    assert obj["spec"]["maxUnavailable"] == 1


async def test_create_priorityclass(kubectl, decoded):
    obj = await check(kubectl, decoded, "create", "priorityclass", "high", "--value=1000", "--description=urgent",
                      "--preemption-policy=Never", get=("priorityclass", "high"))
    assert (obj["value"], obj["description"], obj["preemptionPolicy"]) == (1000, "urgent", "Never")
    assert "globalDefault" not in obj  # false, and omitempty
    obj = await check(kubectl, decoded, "create", "priorityclass", "low", "--value=10", get=("pc", "low"))
    assert obj["preemptionPolicy"] == "PreemptLowerPriority"  # SetDefaults_PriorityClass


# --- RBAC ---------------------------------------------------------------------------------------


async def test_create_role_and_rolebinding(kubectl, decoded):
    obj = await check(kubectl, decoded, "create", "role", "reader", "-n", NS, "--verb=get,list",
                      "--resource=pods,deployments.apps", get=("role", "reader"))
    assert obj["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
                            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]}]
    obj = await check(kubectl, decoded, "create", "rolebinding", "read", "-n", NS, "--role=reader", "--user=alice",
                      f"--serviceaccount={NS}:default", get=("rolebinding", "read"))
    assert obj["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}
    assert obj["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"},
                               {"kind": "ServiceAccount", "name": "default", "namespace": NS}]
    allowed = await kubectl.ok("auth", "can-i", "list", "deployments.apps", "-n", NS, "--as", "alice")
    assert allowed.out == "yes\n"


async def test_create_clusterrole_and_clusterrolebinding(kubectl, decoded):
    obj = await check(kubectl, decoded, "create", "clusterrole", "pod-reader", "--verb=get", "--resource=pods",
                      "--resource-name=box", get=("clusterrole", "pod-reader"))
    assert obj["rules"] == [{"apiGroups": [""], "resourceNames": ["box"], "resources": ["pods"], "verbs": ["get"]}]
    obj = await check(kubectl, decoded, "create", "clusterrole", "aggregate", "--aggregation-rule=team=a",
                      get=("clusterrole", "aggregate"))
    assert obj["aggregationRule"] == {"clusterRoleSelectors": [{"matchLabels": {"team": "a"}}]}
    assert obj["rules"] is None  # `rules` has no omitempty: Go writes its nil slice as null
    obj = await check(kubectl, decoded, "create", "clusterrolebinding", "read-pods", "--clusterrole=pod-reader",
                      "--group=devs", get=("clusterrolebinding", "read-pods"))
    assert obj["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "devs"}]


# --- what is not protobuf -----------------------------------------------------------------------


async def test_create_from_a_file_sends_json(kubectl, decoded, tmp_path):
    """`create -f` sends the file's object as JSON (unstructured), not protobuf: both work."""
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-file\n  namespace: {NS}\n"
                        f"data:\n  k: v\n")
    decoded.clear()
    assert (await kubectl.ok("create", "-f", str(manifest))).out == "configmap/from-file created\n"
    assert decoded == []
    assert (await stored(kubectl, "configmap", "from-file"))["data"] == {"k": "v"}
    again = await kubectl.run("create", "-f", str(manifest))
    assert again.err == f'Error from server (AlreadyExists): error when creating "{manifest}": configmaps ' \
                        f'"from-file" already exists\n'



async def test_invalid_object_is_refused_as_the_real_server_does(kubectl, decoded):
    refused = await kubectl.run("create", "namespace", "Team_A")
    assert refused.code == 1
    assert refused.err.startswith('The Namespace "Team_A" is invalid: metadata.name: Invalid value: "Team_A": a '
                                  'lowercase RFC 1123 label must consist of')
