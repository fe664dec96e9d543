"""The admission webhook over real HTTPS (controller/runtime/webhook_server.py with every kind's decision, its
certificate kept in localcluster by the controller): AdmissionReviews of each kind answered as the API server
expects, what is not a review refused, a slow review cut off, the metrics, /readyz waiting for the certificate,
cert-manager's mode (a directory re-read), and `run`'s flags."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import datetime
import functools
import os
import ssl
import tempfile
from pathlib import Path

import aiohttp
import orjson
import pytest
from prometheus_client import CollectorRegistry

from controller.cmd import cli
from controller.jobs.schema import admission
from controller.kinds.genericjob.kind import GENERICJOB
from controller.kinds.pytorch.kind import PYTORCH
from controller.kinds.registry import KINDS
from controller.kinds.tensorflow.kind import TENSORFLOW
from controller.runtime import costly_reviews, webhook_server
from controller.runtime.certs import CertificateError, CertWatcher, issue
from controller.runtime.leader import LeaderElectionConfig, micro_time
from controller.runtime.manager import Manager
from controller.runtime.webhook_certs import CertKeeperConfig
from controller.runtime.webhook_server import Webhook, WebhookConfig, WebhookServer
from informers.backoff import BackoffPolicy
from localcluster.testing import until
from tests.builders import PYTORCH as PYTORCH_KIND
from tests.builders import TENSORFLOW as TENSORFLOW_KIND
from tests.builders import JobBuilder
from tests.e2e.conftest import CRDS

from .inprocess import Running, manager_config
from .review_handlers import bad, broken, endless

NAMESPACE = "default"
HOST = f"genericjob-controller-webhook.{NAMESPACE}.svc"
PATHS = {kind: admission.path(kind.api) for kind in KINDS.values()}
POD = {"spec": {"containers": [{"name": "tensorflow", "image": "trainer"}]}}
QUICK = BackoffPolicy(initial=0.05, cap=0.2, jitter=0.2)


def keeper(namespace: str = NAMESPACE) -> CertKeeperConfig:
    return CertKeeperConfig(namespace=namespace, poll=0.2, backoff=QUICK)


def job(kind: str, replicas: dict, name: str = "job", **spec) -> dict:
    made = JobBuilder(name, kind=kind, namespace=NAMESPACE, uid="0b7e4f3c-0000-4000-8000-00000000000a",
                      generation=1)
    for replica_type, count in replicas.items():
        made = made.replica(replica_type, count, template=copy.deepcopy(POD))
    return made.spec(**spec).obj()


def review(operation: str, obj: dict, old: dict | None = None, uid: str = "r-1") -> dict:
    kind = KINDS[obj["kind"]]
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": uid, "kind": {"group": kind.api.group, "version": kind.api.version, "kind": kind.api.kind},
        "resource": {"group": kind.api.group, "version": kind.api.version, "resource": kind.api.plural},
        "name": obj["metadata"]["name"], "namespace": NAMESPACE, "operation": operation, "object": obj,
        "oldObject": old, "dryRun": False, "userInfo": {"username": "alice"}}}


def running(obj: dict) -> dict:
    ran = copy.deepcopy(obj)
    ran["status"] = {"phase": "Running", "tasks": [{"type": entry["type"]} for entry in obj["spec"]["replicaSpecs"]]}
    return ran


def edited(obj: dict, change) -> dict:
    new = copy.deepcopy(obj)
    change(new["spec"])
    new["metadata"]["generation"] += 1
    return new


class Client:
    """HTTPS to the webhook as the API server calls it: the Service's name verified against the caBundle."""

    def __init__(self, address: str, ca: bytes) -> None:
        self.base = f"https://{address}"
        self.tls = ssl.create_default_context(cadata=ca.decode())
        self.session = aiohttp.ClientSession()

    async def post(self, path: str, body: bytes | dict, content_type: str = "application/json") -> tuple[int, object]:
        data = body if isinstance(body, bytes) else aiohttp.payload.JsonPayload(body)
        async with self.session.post(self.base + path, data=data, ssl=self.tls, server_hostname=HOST,
                                     headers={"Content-Type": content_type}) as answer:
            return answer.status, (await answer.json() if answer.content_type == "application/json"
                                   else await answer.text())

    async def get(self, path: str) -> int:
        async with self.session.get(self.base + path, ssl=self.tls, server_hostname=HOST) as answer:
            return answer.status


@pytest.fixture
async def webhook(rest_client):
    registry = CollectorRegistry()
    made = admission.make_webhook(rest_client, WebhookConfig(port=0, host="127.0.0.1", keeper=keeper()), registry,
                                  kinds=list(KINDS.values()))
    made.registry_for_test = registry
    await made.start()
    await until(lambda: made.unready() is None, what="the webhook's certificate served")
    yield made
    await made.stop()


@pytest.fixture
async def client(webhook):
    made = Client(webhook.address, webhook.certificates.bundle)
    yield made
    await made.session.close()


def count(registry: CollectorRegistry, path: str, code: str) -> float:
    return registry.get_sample_value("controller_runtime_webhook_requests_total",
                                     {"webhook": path, "code": code}) or 0.0


async def test_each_kind_is_answered_as_the_api_server_expects(webhook, client):
    """The issue's refusals, over HTTPS: a valid create, an invalid one naming the field, a scale-down that strands
    a rule, a PyTorch master of two, a TF replica type changed; and every valid edit passes."""
    registry = webhook.registry_for_test
    generic = job("GenericJob", {"worker": 3}, failureRules=[{"worker": [2]}])
    tf = job(TENSORFLOW_KIND, {"chief": 1, "worker": 2})
    pt = job(PYTORCH_KIND, {"master": 1, "worker": 2})
    for obj in (generic, tf, pt):
        status, answer = await client.post(PATHS[KINDS[obj["kind"]]], review("CREATE", obj))
        assert status == 200 and answer == {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                            "response": {"uid": "r-1", "allowed": True}}

    cases = [
        (GENERICJOB, review("CREATE", job("GenericJob", {"worker": 1}, successRules=[{"ps": [0]}])),
         'spec.successRules[0]: replica type "ps" is not in spec.replicaSpecs'),
        (GENERICJOB, review("UPDATE", edited(running(generic), lambda s: s["replicaSpecs"][0].update(replicas=2)),
                            running(generic)),
         'spec.failureRules[0]: rank 2 of "worker" is out of range [0, 2)'),
        (PYTORCH, review("CREATE", job(PYTORCH_KIND, {"master": 2, "worker": 1})),
         'spec.replicaSpecs[0].replicas: a replica type "master" has exactly one replica'),
        (TENSORFLOW, review("UPDATE", edited(running(tf), lambda s: s["replicaSpecs"][1].update(type="ps")),
                            running(tf)),
         "spec.replicaSpecs: the replica types and their order cannot change once the job exists (it has [chief, "
         "worker]; the spec now has [chief, ps]): only their replicas can"),
    ]
    for kind, body, message in cases:
        status, answer = await client.post(PATHS[kind], body)
        response = answer["response"]
        assert status == 200 and response["uid"] == "r-1" and response["allowed"] is False, answer
        assert response["status"]["code"] == 422 and response["status"]["reason"] == "Invalid"
        assert response["status"]["message"] == message
        assert response["status"]["details"]["causes"][0]["field"] == message.partition(":")[0]
    # Valid edits pass: a scale-up, the stranding rule removed with the scale-down.
    scaled = edited(running(generic), lambda s: (s["replicaSpecs"][0].update(replicas=2), s.pop("failureRules")))
    assert (await client.post(PATHS[GENERICJOB], review("UPDATE", scaled, running(generic))))[1]["response"][
        "allowed"] is True
    assert count(registry, PATHS[GENERICJOB], "200") == 4
    assert count(registry, PATHS[TENSORFLOW], "200") == 2 and count(registry, PATHS[PYTORCH], "200") == 2
    latency = registry.get_sample_value("controller_runtime_webhook_latency_seconds_count",
                                        {"webhook": PATHS[GENERICJOB]})
    assert latency == 4
    assert registry.get_sample_value("controller_runtime_webhook_requests_in_flight",
                                     {"webhook": PATHS[GENERICJOB]}) == 0


async def test_what_is_not_a_review_is_refused(webhook, client):
    registry = webhook.registry_for_test
    path = PATHS[GENERICJOB]
    good = review("CREATE", job("GenericJob", {"worker": 1}))
    assert await client.get(path) == 405
    assert (await client.post("/validate-nothing", good))[0] == 404
    status, text = await client.post(path, b'{"a": 1}', content_type="text/plain")
    assert (status, text) == (400, "contentType=text/plain, expected application/json\n")
    assert (await client.post(path, b""))[0] == 400
    status, text = await client.post(path, b"{not json")
    assert status == 400 and text.startswith("the body is not JSON")
    status, text = await client.post(path, {"apiVersion": "v1", "kind": "Pod"})
    assert status == 400 and "expected an admission.k8s.io/v1 AdmissionReview" in text
    status, _ = await client.post(path, b" " * (webhook_server.MAX_BODY + 1))
    assert status == 413
    assert count(registry, path, "400") == 4 and count(registry, path, "413") == 1
    # Costly reviews (a job near its size limit; many rules) are decided in a worker process, and answered the same.
    big = job("GenericJob", {"worker": 1}, successRules=[{"worker": [7]}])
    big["metadata"]["annotations"] = {"note": "x" * (costly_reviews.COSTLY_BYTES * 2)}
    many = job("GenericJob", {"worker": 1}, successRules=[{"worker": [7]}] * costly_reviews.COSTLY_ITEMS)
    for costly in (big, many):
        assert costly_reviews.costly(orjson.dumps(review("CREATE", costly)))
        status, answer = await client.post(path, review("CREATE", costly))
        assert status == 200 and answer["response"]["allowed"] is False
        assert answer["response"]["status"]["message"].startswith("spec.successRules[0]: rank 7 of")


async def test_a_dry_run_is_answered_like_any_other(client):
    body = review("CREATE", job("GenericJob", {"worker": 1}, successRules=[{"worker": [3]}]))
    dry = copy.deepcopy(body)
    dry["request"]["dryRun"] = True
    assert (await client.post(PATHS[GENERICJOB], dry)) == (await client.post(PATHS[GENERICJOB], body))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_slow_review_is_cut_off_so_the_failure_policy_decides(tmp_path):
    server = WebhookServer({"/slow": endless, "/broken": broken, "/bad": bad}, timeout=1.0)
    cert, key = issue("test", [HOST], webhook_server_validity())
    directory = _directory(cert, key)
    watcher = CertWatcher(str(directory), flag="--webhook-cert-dir", what="webhook")
    await server.start("127.0.0.1", 0, watcher.context)
    client = Client(server.address, cert)
    try:
        pid_file = tmp_path / "pid"
        padded = orjson.dumps({"pid_file": str(pid_file), "padding": " " * costly_reviews.COSTLY_BYTES})
        status, text = await client.post("/slow", padded)
        assert (status, text) == (500, "the admission review took longer than 1s\n")
        # The work stopped with its request: the worker process deciding it is gone.
        await until(lambda: not alive(int(pid_file.read_text())), what="the endless review's worker stopped")
        status, text = await client.post("/broken", {})
        assert status == 500 and "KeyError" in text
        assert await client.post("/bad", {}) == (400, "no\n")
    finally:
        await client.session.close()
        await server.stop()


def webhook_server_validity() -> datetime.timedelta:
    return datetime.timedelta(days=1)


def _directory(cert: bytes, key: bytes) -> Path:
    directory = Path(tempfile.mkdtemp(prefix="webhook-certs-"))
    (directory / "tls.crt").write_bytes(cert)
    (directory / "tls.key").write_bytes(key)
    return directory


async def test_cert_managers_mode_serves_the_directory_and_its_renewals():
    cert, key = issue("first", [HOST], webhook_server_validity())
    directory = _directory(cert, key)
    made = admission.make_webhook(None, WebhookConfig(port=0, host="127.0.0.1", cert_dir=str(directory),
                                                      cert_poll=0.05), kinds=[GENERICJOB])
    await made.start()
    client = Client(made.address, cert)
    try:
        assert made.unready() is None
        status, answer = await client.post(PATHS[GENERICJOB], review("CREATE", job("GenericJob", {"worker": 1})))
        assert status == 200 and answer["response"]["allowed"] is True
        second, second_key = issue("second", [HOST], webhook_server_validity())
        (directory / "tls.key").write_bytes(second_key)
        (directory / "tls.crt").write_bytes(second)
        renewed = Client(made.address, second)

        async def serves_the_second():
            try:
                async with renewed.session.post(renewed.base + PATHS[GENERICJOB], ssl=renewed.tls,
                                                server_hostname=HOST, json={}) as answer:
                    return answer.status == 400
            except aiohttp.ClientConnectorCertificateError:
                return False

        await until(serves_the_second, what="the renewed certificate served")
        await renewed.session.close()
    finally:
        await client.session.close()
        await made.stop()
    with pytest.raises(CertificateError, match="--webhook-cert-dir"):
        await admission.make_webhook(None, WebhookConfig(port=0, cert_dir=str(directory / "nothing")),
                                     kinds=[GENERICJOB]).start()


async def test_readiness_waits_for_the_webhooks_certificate(cluster, api_client, rest_client):
    """The Secret's namespace does not exist yet: the certificate cannot be kept, /readyz says so; once it can,
    the replica is ready (a standby too: the webhook needs no leadership)."""
    cluster.apply_crds(CRDS)
    config = dataclasses.replace(
        manager_config(), webhook=WebhookConfig(port=0, host="127.0.0.1", keeper=keeper("webhook-home")),
        make_webhook=functools.partial(admission.make_webhook, kinds=[GENERICJOB]))
    run = Running(Manager(rest_client, config))
    await run.start()
    try:
        await run.answers("/readyz", 500, "the admission webhook has no certificate to serve yet")
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "webhook-home"}}
        response = await api_client.call_api("/api/v1/namespaces", "POST", body=namespace,
                                             header_params={"Content-Type": "application/json"},
                                             auth_settings=["BearerToken"], _preload_content=False)
        assert response.status == 201
        await run.answers("/readyz", 200, "ok")
        assert isinstance(run.manager.webhook, Webhook) and run.manager.webhook.address
    finally:
        assert await run.stop() == 0


async def test_a_standby_replica_answers_too(cluster, api_client, rest_client):
    """Another holds the Lease: this replica never leads, and still answers admission requests and is ready."""
    cluster.apply_crds(CRDS)
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "genericjob-controller", "namespace": NAMESPACE},
             "spec": {"holderIdentity": "the-leader", "leaseDurationSeconds": 3600, "renewTime": micro_time(),
                      "acquireTime": micro_time(), "leaseTransitions": 0}}
    response = await api_client.call_api(f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases", "POST",
                                         body=lease, header_params={"Content-Type": "application/json"},
                                         auth_settings=["BearerToken"], _preload_content=False)
    assert response.status == 201
    election = LeaderElectionConfig("genericjob-controller", NAMESPACE, identity="standby", lease_duration=3600,
                                    renew_deadline=10, retry_period=2)
    config = dataclasses.replace(
        manager_config(election), webhook=WebhookConfig(port=0, host="127.0.0.1", keeper=keeper()),
        make_webhook=functools.partial(admission.make_webhook, kinds=[GENERICJOB]))
    run = Running(Manager(rest_client, config))
    await run.start()
    try:
        await run.answers("/readyz", 200, "ok")
        webhook = run.manager.webhook
        client = Client(webhook.address, webhook.certificates.bundle)
        body = review("CREATE", job("GenericJob", {"worker": 1}, successRules=[{"worker": [1]}]))
        status, answer = await client.post(PATHS[GENERICJOB], body)
        await client.session.close()
        assert status == 200 and answer["response"]["status"]["code"] == 422
        assert run.manager.elector.identity == "standby" and not run.manager.elector.is_leader
    finally:
        assert await run.stop() == 0


async def test_a_taken_port_ends_the_program(rest_client):
    taken = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = taken.sockets[0].getsockname()[1]
    config = dataclasses.replace(
        manager_config(), webhook=WebhookConfig(port=port, host="127.0.0.1", keeper=keeper()),
        make_webhook=functools.partial(admission.make_webhook, kinds=[GENERICJOB]))
    manager = Manager(rest_client, config)
    try:
        assert await asyncio.wait_for(manager.run(), 10) == 1
        assert manager.exit_reason == "cannot listen"
    finally:
        taken.close()
        await taken.wait_closed()


def test_runs_flags_choose_the_webhooks_port_and_certificates(tmp_path, monkeypatch):
    monkeypatch.setenv("POD_NAMESPACE", "team-ops")  # the Deployment sets it from the downward API
    config = cli.manager_config(cli.parse_args(["run"], {}))
    assert (config.webhook.port, config.webhook.host, config.webhook.cert_dir) == (9443, "", None)
    assert config.webhook.keeper == CertKeeperConfig(namespace="team-ops")
    monkeypatch.delenv("POD_NAMESPACE")
    assert cli.manager_config(cli.parse_args(["run"], {})).webhook.keeper.namespace == "genericjob-system"
    flags = cli.parse_args(["run", "--webhook-port", "8443", "--webhook-namespace", "ops", "--webhook-secret-name",
                            "s", "--webhook-service-name", "svc", "--webhook-configuration-name", "c",
                            "--webhook-host", "127.0.0.1"], {})
    webhook = cli.manager_config(flags).webhook
    assert (webhook.port, webhook.host) == (8443, "127.0.0.1")
    assert (webhook.keeper.namespace, webhook.keeper.secret_name, webhook.keeper.service_name,
            webhook.keeper.configuration_name) == ("ops", "s", "svc", "c")
    assert webhook.keeper.dns_names == ["svc.ops.svc", "svc.ops.svc.cluster.local"]
    assert cli.manager_config(cli.parse_args(["run", "--webhook-port", "0"], {})).webhook is None
    from_env = cli.manager_config(cli.parse_args(["run"], {"GENERICJOB_WEBHOOK_CERT_DIR": str(tmp_path)})).webhook
    assert from_env.cert_dir == str(tmp_path) and from_env.keeper is None
