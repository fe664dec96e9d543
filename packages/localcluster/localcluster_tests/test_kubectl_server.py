"""kubectl commands whose answer comes from what a real 1.35 cluster has besides the API: its node, the
objects its controllers keep in every namespace, its bootstrap RBAC policy and objects (the kubernetes
Service, the system PriorityClasses), its admission plugins' pod defaults, TokenRequest, /version,
and the logs of a pod that is not running.

The installed kubectl 1.35 against one localcluster served over TLS (kubectl sends tokens over TLS
only) with the scripted pod runner (it binds pods to the node `localnode`); each test in a namespace
of its own. The expected outputs are the real
server's (kubernetes/kubernetes release-1.35: pkg/printers, plugin/pkg/admission, the kubelet),
normalised for names, times and versions.
"""

from __future__ import annotations

import base64
import json

import pytest
import pytest_asyncio

from localcluster import LocalCluster
from localcluster.testing import Kubectl, until

from .test_kubectl import manifest

pytestmark = pytest.mark.asyncio(loop_scope="module")

PODS, NODES = ("", "pods"), ("", "nodes")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster():
    async with LocalCluster(runner="scripted", tls=True) as running:  # kubectl sends tokens over TLS only
        yield running


def pod(name: str, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], **spec}}


# --- /version -------------------------------------------------------------------------------------


async def test_version_has_the_keys_of_a_1_35_server_in_its_order(kubectl):
    raw = json.loads((await kubectl.ok("get", "--raw", "/version")).out)
    assert list(raw) == ["major", "minor", "emulationMajor", "emulationMinor", "minCompatibilityMajor",
                         "minCompatibilityMinor", "gitVersion", "gitCommit", "gitTreeState", "buildDate",
                         "goVersion", "compiler", "platform"]
    assert (raw["major"], raw["minor"], raw["emulationMajor"], raw["emulationMinor"]) == ("1", "35", "1", "35")
    assert (raw["minCompatibilityMajor"], raw["minCompatibilityMinor"]) == ("1", "34")
    shown = json.loads((await kubectl.ok("version", "-o", "json")).out)["serverVersion"]
    assert shown["emulationMinor"] == "35" and shown["minCompatibilityMinor"] == "34"


# --- auth can-i --list ----------------------------------------------------------------------------


async def test_can_i_list_of_a_service_account_shows_the_issuer_discovery_urls(kubectl, namespace):
    listed = await kubectl.ok("auth", "can-i", "--list", f"--as=system:serviceaccount:{namespace}:default")
    rows = {tuple(r) for r in listed.rows()}
    for url in ("/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks",
                "/openid/v1/jwks/"):
        assert (f"[{url}]", "[]", "[get]") in rows, listed.out
    assert ("[/version]", "[]", "[get]") in rows and ("[/api/*]", "[]", "[get]") in rows
    # A user who is not a ServiceAccount is not bound to it.
    other = await kubectl.ok("auth", "can-i", "--list", "--as=jane")
    assert "/openid/v1/jwks" not in other.out and "[/version]" in other.out


# --- nodes ----------------------------------------------------------------------------------------


async def test_get_nodes_shows_the_node_ready(kubectl):
    table = (await kubectl.ok("get", "nodes")).table()
    assert list(table) == ["localnode"]
    row = table["localnode"]
    assert list(row) == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert (row["STATUS"], row["ROLES"], row["VERSION"]) == ("Ready", "<none>", "v1.35.0-localcluster")
    assert row["AGE"][-1] in "smhd"
    wide = (await kubectl.ok("get", "no", "-o", "wide")).table()["localnode"]
    assert list(wide)[5:] == ["INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"]
    assert (wide["INTERNAL-IP"], wide["EXTERNAL-IP"]) == ("127.0.0.1", "<none>")
    node = json.loads((await kubectl.ok("get", "node", "localnode", "-o", "json")).out)
    assert {c["type"]: c["status"] for c in node["status"]["conditions"]} == {
        "MemoryPressure": "False", "DiskPressure": "False", "PIDPressure": "False", "Ready": "True"}
    assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.35.0-localcluster"
    assert set(node["status"]["capacity"]) >= {"cpu", "memory", "pods"} and node["status"]["allocatable"]
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "localnode"


async def test_apply_of_a_node_and_its_roles_column(kubectl, cluster):
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "worker-2", "labels": {"node-role.kubernetes.io/worker": "",
                                                         "node-role.kubernetes.io/gpu": ""}}}
    applied = await kubectl.run("apply", "-f", "-", stdin=manifest(node))
    assert applied.code == 0 and applied.out == "node/worker-2 created\n", applied.err
    try:
        row = (await kubectl.ok("get", "node", "worker-2")).table()["worker-2"]
        # No kubelet reports on it: no Ready condition, no version.
        assert (row["STATUS"], row["ROLES"], row["VERSION"]) == ("Unknown", "gpu,worker", "")
        await kubectl.ok("cordon", "worker-2")
        assert (await kubectl.ok("get", "node", "worker-2")).table()["worker-2"]["STATUS"] == \
            "Unknown,SchedulingDisabled"
    finally:
        await kubectl.ok("delete", "node", "worker-2")
    assert cluster.store.get(NODES, ("", "worker-2")) is None


async def test_pods_are_bound_to_the_node(kubectl, cluster, namespace):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(pod("bound")))
    await until(lambda: (cluster.store.get(PODS, (namespace, "bound")) or {}).get("status", {}).get("phase")
                     == "Running", what="the pod running")
    stored = cluster.store.get(PODS, (namespace, "bound"))
    assert stored["spec"]["nodeName"] == "localnode"
    assert {"type": "PodScheduled", "status": "True"}.items() <= stored["status"]["conditions"][0].items()
    assert (await kubectl.ok("get", "pods", "-o", "wide")).table()["bound"]["NODE"] == "localnode"


async def test_a_pod_created_on_the_node_runs_and_one_on_a_missing_node_stays_pending(kubectl, cluster, namespace):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(pod("here", nodeName="localnode")))
    await kubectl.ok("apply", "-f", "-", stdin=manifest(pod("nowhere", nodeName="no-such-node")))
    await until(lambda: (cluster.store.get(PODS, (namespace, "here")) or {}).get("status", {}).get("phase")
                     == "Running", what="the pod running")
    # Nothing schedules a bound pod and no kubelet claims it: Pending, no conditions, no container statuses.
    table = (await kubectl.ok("get", "pods", "-o", "wide")).table()
    assert (table["nowhere"]["STATUS"], table["nowhere"]["READY"], table["nowhere"]["NODE"]) == \
        ("Pending", "0/1", "no-such-node")
    assert (table["here"]["STATUS"], table["here"]["NODE"]) == ("Running", "localnode")
    assert cluster.store.get(PODS, (namespace, "nowhere"))["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


# --- kubectl logs of a pod that is not running ----------------------------------------------------


@pytest.mark.slow  # kubectl
async def test_logs_of_a_pod_not_yet_scheduled_print_nothing(tmp_path):
    """LogLocation has no location for a pod with no node: 200 and no body, so kubectl exits 0 silently."""
    async with LocalCluster(runner="none") as unscheduled:  # nothing binds pods
        kubectl = Kubectl(unscheduled, tmp_path)
        await kubectl.ok("apply", "-f", "-", stdin=manifest(pod("waiting")))
        logs = await kubectl.run("logs", "waiting")
        assert (logs.code, logs.out, logs.err) == (0, "", "")
        wrong = await kubectl.run("logs", "waiting", "-c", "nope")
        assert (wrong.code, wrong.err) == (1, "error: container nope is not valid for pod waiting\n")  # kubectl's
        assert unscheduled.store.get(PODS, ("default", "waiting"))["status"]["phase"] == "Pending"
        assert (await kubectl.ok("get", "nodes")).err == "No resources found\n"  # no kubelet, no node


async def test_logs_of_a_waiting_container_are_the_kubelets_400(kubectl, cluster, namespace):
    cluster.runner.set_script(f"{namespace}/pulling", {"fail_to_start": "ImagePullBackOff"})
    cluster.runner.set_script(f"{namespace}/creating", {"fail_to_start": "ContainerCreating"})
    for name in ("pulling", "creating"):
        await kubectl.ok("apply", "-f", "-", stdin=manifest(pod(name)))
        await until(lambda name=name: (cluster.store.get(PODS, (namespace, name)) or {}).get("spec", {})
                         .get("nodeName"), what=f"{name} bound")
    pulling = await kubectl.run("logs", "pulling")
    assert (pulling.code, pulling.out) == (1, "")
    assert pulling.err == 'Error from server (BadRequest): container "c" in pod "pulling" is waiting to start: ' \
                          "trying and failing to pull image\n"
    creating = await kubectl.run("logs", "creating")
    assert creating.err == 'Error from server (BadRequest): container "c" in pod "creating" is waiting to start: ' \
                           "ContainerCreating\n" and creating.code == 1
    await kubectl.ok("apply", "-f", "-", stdin=manifest(pod("running")))
    await until(lambda: (cluster.store.get(PODS, (namespace, "running")) or {}).get("status", {}).get("phase")
                     == "Running", what="the pod running")
    assert (await kubectl.ok("logs", "running")).out == ""  # a scripted container prints nothing
    previous = await kubectl.run("logs", "running", "--previous")
    assert previous.err == 'Error from server (BadRequest): previous terminated container "c" in pod "running" not ' \
                           "found\n"


async def test_logs_of_a_pod_bound_to_a_missing_node_are_not_found(kubectl):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(pod("astray", nodeName="no-such-node")))
    astray = await kubectl.run("logs", "astray")
    assert (astray.code, astray.err) == (1, 'Error from server (NotFound): nodes "no-such-node" not found\n')


# --- kubectl create token -------------------------------------------------------------------------


def claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


async def test_create_token_prints_a_token_that_authenticates_as_the_service_account(kubectl, cluster, namespace,
                                                                                      tmp_path):
    await kubectl.ok("create", "serviceaccount", "robot")
    made = await kubectl.ok("create", "token", "robot")
    token = made.out.strip()
    assert made.out == token and token.count(".") == 2  # kubectl prints it with no newline
    seen = claims(token)
    assert seen["sub"] == f"system:serviceaccount:{namespace}:robot" and seen["exp"] - seen["iat"] == 3600
    assert seen["aud"] == ["https://kubernetes.default.svc.cluster.local"]
    assert seen["kubernetes.io"]["serviceaccount"]["uid"] == \
        cluster.store.get(("", "serviceaccounts"), (namespace, "robot"))["metadata"]["uid"]
    as_robot = Kubectl(cluster.write_kubeconfig(tmp_path / "robot", token=token, namespace=namespace),
                       tmp_path / "robot-cache")
    who = await as_robot.ok("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
    assert who.out == f"system:serviceaccount:{namespace}:robot"
    denied = await as_robot.run("get", "pods")
    assert denied.code == 1 and f'User "system:serviceaccount:{namespace}:robot" cannot list resource "pods"' \
        in denied.err
    # The token dies with its ServiceAccount.
    await kubectl.ok("delete", "serviceaccount", "robot")
    gone = await as_robot.run("auth", "whoami")
    assert gone.code == 1 and "Unauthorized" in gone.err


async def test_create_token_duration_audience_output_and_errors(kubectl, namespace):
    await kubectl.ok("create", "serviceaccount", "robot")
    long = await kubectl.ok("create", "token", "robot", "--duration=2h", "--audience=api", "--audience=vault",
                            "-o", "json")
    request = json.loads(long.out)
    assert (request["kind"], request["apiVersion"]) == ("TokenRequest", "authentication.k8s.io/v1")
    assert request["spec"]["audiences"] == ["api", "vault"] and request["spec"]["expirationSeconds"] == 7200
    assert request["metadata"]["name"] == "robot" and request["metadata"]["namespace"] == namespace
    assert claims(request["status"]["token"])["aud"] == ["api", "vault"]
    short = await kubectl.run("create", "token", "robot", "--duration=5m")
    assert short.code == 1 and short.err == (
        'error: failed to create token: TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: '
        "Invalid value: 300: may not specify a duration less than 10 minutes\n")
    missing = await kubectl.run("create", "token", "nobody")
    assert missing.code == 1 and missing.err == 'error: failed to create token: serviceaccounts "nobody" not found\n'


async def test_a_token_bound_to_a_pod_dies_with_it_and_one_for_another_audience_never_works(kubectl, cluster,
                                                                                             namespace, tmp_path):
    await kubectl.ok("create", "serviceaccount", "robot")
    await kubectl.ok("apply", "-f", "-", stdin=manifest(pod("holder", serviceAccountName="robot"),
                                                        pod("other", serviceAccountName="default")))
    other = await kubectl.run("create", "token", "robot", "--bound-object-kind=Pod", "--bound-object-name=other")
    assert other.err == 'error: failed to create token: cannot bind token for serviceaccount "robot" to pod running ' \
                        "with different serviceaccount name.\n"
    bound = (await kubectl.ok("create", "token", "robot", "--bound-object-kind=Pod",
                              "--bound-object-name=holder")).out.strip()
    about = claims(bound)["kubernetes.io"]
    assert about["pod"]["name"] == "holder" and about["serviceaccount"]["name"] == "robot"
    elsewhere = (await kubectl.ok("create", "token", "robot", "--audience=vault")).out.strip()

    def as_(token: str, name: str) -> Kubectl:
        return Kubectl(cluster.write_kubeconfig(tmp_path / name, token=token, namespace=namespace), tmp_path / name)

    assert (await as_(bound, "bound").run("auth", "whoami")).code == 0
    assert "Unauthorized" in (await as_(elsewhere, "elsewhere").run("auth", "whoami")).err
    await kubectl.ok("delete", "pod", "holder", "--grace-period=0", "--force")
    await until(lambda: cluster.store.get(PODS, (namespace, "holder")) is None, what="the pod gone")
    assert "Unauthorized" in (await as_(bound, "bound-after").run("auth", "whoami")).err


# --- what kube-controller-manager keeps in every namespace ----------------------------------------


async def test_every_namespace_has_kube_root_ca_crt_and_a_default_service_account(kubectl, cluster):
    await kubectl.ok("create", "namespace", "fresh")
    try:
        cms = (await kubectl.ok("get", "configmaps", "-n", "fresh")).table()
        assert list(cms) == ["kube-root-ca.crt"] and cms["kube-root-ca.crt"]["DATA"] == "1"
        assert list((await kubectl.ok("get", "serviceaccounts", "-n", "fresh")).table()) == ["default"]
        cm = json.loads((await kubectl.ok("get", "cm", "kube-root-ca.crt", "-n", "fresh", "-o", "json",
                                          "--show-managed-fields")).out)
        assert cm["data"] == {"ca.crt": cluster.certificate.decode()} and "BEGIN CERTIFICATE" in cm["data"]["ca.crt"]
        assert cm["metadata"]["annotations"] == {"kubernetes.io/description": (
            "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such "
            "as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
            "distributions of Kubernetes clusters.")}
        assert [m["manager"] for m in cm["metadata"]["managedFields"]] == ["kube-controller-manager"]
        # Deleted: made again; changed: put back.
        first_uid = cm["metadata"]["uid"]
        await kubectl.ok("delete", "cm", "kube-root-ca.crt", "-n", "fresh")
        again = json.loads((await kubectl.ok("get", "cm", "kube-root-ca.crt", "-n", "fresh", "-o", "json")).out)
        assert again["metadata"]["uid"] != first_uid and again["data"] == cm["data"]
        await kubectl.ok("patch", "cm", "kube-root-ca.crt", "-n", "fresh", "-p", '{"data":{"ca.crt":"nope"}}')
        fixed = json.loads((await kubectl.ok("get", "cm", "kube-root-ca.crt", "-n", "fresh", "-o", "json")).out)
        assert fixed["data"] == cm["data"]
        await kubectl.ok("delete", "sa", "default", "-n", "fresh")
        assert list((await kubectl.ok("get", "sa", "-n", "fresh")).table()) == ["default"]
    finally:
        await kubectl.ok("delete", "namespace", "fresh", "--wait=false")
    for system in ("default", "kube-system", "kube-public", "kube-node-lease"):
        assert cluster.store.get(("", "configmaps"), (system, "kube-root-ca.crt"))["data"]["ca.crt"] == \
            cluster.certificate.decode()


# --- the default admission plugins' pod defaults ---------------------------------------------------


async def test_a_pod_gets_what_the_default_admission_plugins_add(kubectl, cluster, namespace):
    made = pod("plain", initContainers=[{"name": "init", "image": "busybox:1.36"}])
    await kubectl.ok("apply", "-f", "-", stdin=manifest(made))
    spec = json.loads((await kubectl.ok("get", "pod", "plain", "-o", "json")).out)["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("default", "default")
    assert (spec["priority"], spec["preemptionPolicy"], spec["enableServiceLinks"]) == (0, "PreemptLowerPriority", True)
    assert spec["tolerations"] == [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300}]
    [volume] = spec["volumes"]
    assert volume["name"].startswith("kube-api-access-") and len(volume["name"]) == len("kube-api-access-") + 5
    assert volume["projected"] == {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}
    mount = {"name": volume["name"], "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
    for container in (*spec["initContainers"], *spec["containers"]):
        assert container["volumeMounts"] == [mount] and container["resources"] == {}
    # The pod still runs (nothing is mounted for real, the ConfigMap exists).
    await until(lambda: (cluster.store.get(PODS, (namespace, "plain")) or {}).get("status", {}).get("phase")
                     == "Running", what="the pod running")


async def test_no_token_volume_when_automount_is_off_and_tolerations_already_given(kubectl):
    await kubectl.ok("apply", "-f", "-", stdin=manifest(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "quiet"},
         "automountServiceAccountToken": False, "imagePullSecrets": [{"name": "registry"}]},
        pod("off", serviceAccountName="quiet", tolerations=[{"operator": "Exists"}]),
        pod("on-again", serviceAccountName="quiet", automountServiceAccountToken=True),
        pod("mounted", automountServiceAccountToken=False,
            tolerations=[{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                          "tolerationSeconds": 60}])))
    off = json.loads((await kubectl.ok("get", "pod", "off", "-o", "json")).out)["spec"]
    assert "volumes" not in off and "volumeMounts" not in off["containers"][0]
    assert off["tolerations"] == [{"operator": "Exists"}] and off["imagePullSecrets"] == [{"name": "registry"}]
    on = json.loads((await kubectl.ok("get", "pod", "on-again", "-o", "json")).out)["spec"]
    assert on["volumes"][0]["name"].startswith("kube-api-access-")
    mounted = json.loads((await kubectl.ok("get", "pod", "mounted", "-o", "json")).out)["spec"]
    assert "volumes" not in mounted and [t["key"] for t in mounted["tolerations"]] == [
        "node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"]


async def test_service_account_and_priority_class_must_exist(kubectl, namespace):
    missing = await kubectl.run("apply", "-f", "-", stdin=manifest(pod("lost", serviceAccountName="ghost")))
    assert missing.code == 1 and missing.err.strip().endswith(
        'pods "lost" is forbidden: error looking up service account '
        f'{namespace}/ghost: serviceaccount "ghost" not found')
    no_class = await kubectl.run("apply", "-f", "-", stdin=manifest(pod("classless", priorityClassName="gold")))
    assert no_class.code == 1 and no_class.err.strip().endswith(
        'pods "classless" is forbidden: no PriorityClass with name gold was found')
    await kubectl.ok("create", "priorityclass", "bronze", "--value=7", "--preemption-policy=Never")
    try:
        await kubectl.ok("apply", "-f", "-", stdin=manifest(pod("classy", priorityClassName="bronze"),
                                                            pod("critical", priorityClassName="system-node-critical")))
        classy = json.loads((await kubectl.ok("get", "pod", "classy", "-o", "json")).out)["spec"]
        assert (classy["priority"], classy["preemptionPolicy"]) == (7, "Never")
        critical = json.loads((await kubectl.ok("get", "pod", "critical", "-o", "json")).out)["spec"]
        assert critical["priority"] == 2000001000
        wrong = await kubectl.run("apply", "-f", "-", stdin=manifest(pod("wrong", priorityClassName="bronze",
                                                                         priority=9)))
        assert wrong.code == 1 and "the integer value of priority (9) must not be provided in pod spec; priority " \
            "admission controller computed 7 from the given PriorityClass name" in wrong.err
    finally:
        await kubectl.ok("delete", "priorityclass", "bronze")
    classes = (await kubectl.ok("get", "priorityclasses")).table()
    assert {name: (row["VALUE"], row["GLOBAL-DEFAULT"], row["PREEMPTIONPOLICY"]) for name, row in classes.items()} == {
        "system-cluster-critical": ("2000000000", "false", "PreemptLowerPriority"),
        "system-node-critical": ("2000001000", "false", "PreemptLowerPriority")}


async def test_the_kubernetes_service_is_in_default(kubectl):
    row = (await kubectl.ok("get", "services", "-n", "default", "-o", "wide")).table()["kubernetes"]
    assert (row["TYPE"], row["CLUSTER-IP"], row["EXTERNAL-IP"], row["PORT(S)"], row["SELECTOR"]) == \
        ("ClusterIP", "10.96.0.1", "<none>", "443/TCP", "<none>")
    service = json.loads((await kubectl.ok("get", "svc", "kubernetes", "-n", "default", "-o", "json")).out)
    assert service["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    assert service["spec"]["ports"] == [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]
