"""`genericjob-controller local` runs the admission webhook as a cluster does: `kubectl apply` of an invalid job, or
an edit that would strand a rule, is refused by the real kubectl against a local run; valid jobs and edits pass.
With `--no-webhook`, or a webhook that is down or hangs under failurePolicy Ignore, invalid jobs are admitted and
the controller fails them with InvalidSpec; under Fail the API server refuses with its "failed calling webhook".
Each run is in the test's process (local_inprocess.py), the real kubectl against it.

What kubectl prints for a denial: the webhook answers 422 Invalid with a cause per field, and kubectl (as against a
real API server) prints the causes, `The GenericJob "x" is invalid: spec.failureRules[0]: ...`, not the message
`admission webhook "..." denied the request: ...`; that message, which names the webhook, is checked on the same
request made through the API.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio import client, config

from controller.devtools.local_webhook import CONFIGURATION, NAMESPACE, SERVICE
from localcluster.testing import Kubectl

from .local_inprocess import LocalRun
from .subprocesses import until

pytestmark = pytest.mark.slow  # each test runs local's pods

GROUP, VERSION = "batch.tensorstack.dev", "v1beta1"
DENIED = 'admission webhook "{}.batch.tensorstack.dev" denied the request: '


def generic(name: str, replicas: int = 1, command: str = "true", **spec) -> dict:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "GenericJob", "metadata": {"name": name},
            "spec": {**spec, "replicaSpecs": [{"type": "worker", "replicas": replicas, "template": {"spec": {
                "containers": [{"name": "main", "image": "ignored", "command": ["sh", "-c", command]}]}}}]}}


async def apply(kubectl: Kubectl, tmp_path: Path, obj: dict, *args: str):
    path = tmp_path / f"{obj['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(obj))
    return await kubectl.run("apply", "-f", str(path), *args)


async def api_message(kubeconfig: Path, plural: str, obj: dict) -> str:
    """The message of the API server's refusal of creating `obj`, through the API rather than kubectl."""
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    async with client.ApiClient(configuration) as api:
        try:
            await client.CustomObjectsApi(api).create_namespaced_custom_object(GROUP, VERSION, "default", plural, obj)
        except client.ApiException as exc:
            assert exc.status == 422, exc.body
            return json.loads(exc.body)["message"]
    raise AssertionError(f"{obj['metadata']['name']} was admitted")


async def phase(kubectl: Kubectl, name: str) -> str:
    got = await kubectl.run("get", "genericjob", name, "-o", "jsonpath={.status.phase}")
    return got.out if got.code == 0 else ""


async def failed_reason(kubectl: Kubectl, name: str) -> str:
    got = await kubectl.ok("get", "genericjob", name, "-o",
                           'jsonpath={.status.conditions[?(@.type=="Failed")].reason}')
    return got.out


async def test_kubectl_apply_of_invalid_jobs_and_edits_is_refused_in_a_local_run(tmp_path):
    async with LocalRun(tmp_path, "--port", "0") as local:
        await local.line(r"^admission webhook: https://127\.0\.0\.1:\d+ ")
        assert "its admission webhook on" in (await local.line(r"^ready: ")).string
        kubectl = Kubectl(local.kubeconfig, tmp_path)

        # A rule naming a type the job does not have.
        unknown = generic("unknown-type", failureRules=[{"chief": [0]}])
        done = await apply(kubectl, tmp_path, unknown)
        assert done.code == 1 and done.err.strip() == (
            'The GenericJob "unknown-type" is invalid: spec.failureRules[0]: replica type "chief" is not in '
            'spec.replicaSpecs'), done.err
        assert (await api_message(local.kubeconfig, "genericjobs", unknown)) == (
            DENIED.format("genericjobs") + 'spec.failureRules[0]: replica type "chief" is not in spec.replicaSpecs')
        # A `$(...)` that cannot be resolved.
        variable = generic("variable", command="echo $(replicas[ps])")
        done = await apply(kubectl, tmp_path, variable)
        assert done.code == 1 and "spec.replicaSpecs[0].template.spec.containers[0].command[2]: " in done.err, done.err
        assert (await api_message(local.kubeconfig, "genericjobs", variable)).startswith(DENIED.format("genericjobs"))
        # A PyTorch master of two: the CRD's rule answers first (schema validation precedes admission), with the
        # controller's words; the webhook would say the same (tests/program/test_webhook_localcluster.py).
        master = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PyTorchTrainingJob", "metadata": {"name": "two"},
                  "spec": {"replicaSpecs": [
                      {"type": kind, "replicas": count, "template": {"spec": {"containers": [
                          {"name": "pytorch", "image": "ignored", "command": ["true"]}]}}}
                      for kind, count in (("master", 2), ("worker", 1))]}}
        done = await apply(kubectl, tmp_path, master)
        assert done.code == 1 and "spec.replicaSpecs" in done.err and \
            'a replica type "master" has exactly one replica' in done.err, done.err
        assert (await kubectl.run("get", "genericjob", "unknown-type")).code == 1  # none of them was stored

        # A valid job, running (its ranks wait for a file), edited.
        go = tmp_path / "go"
        running = generic("edited", replicas=3, command=f"until [ -e {go} ]; do sleep 0.05; done",
                          successRules=[{"worker": [0]}], failureRules=[{"worker": [2]}])
        (await apply(kubectl, tmp_path, running)).check()
        await local.line(r"edited\s+Running")
        scale_down = '[{"op": "replace", "path": "/spec/replicaSpecs/0/replicas", "value": 2}]'
        stranded = 'spec.failureRules[0]: rank 2 of "worker" is out of range [0, 2)'
        done = await kubectl.run("patch", "genericjob", "edited", "--type=json", "-p", scale_down)
        assert done.code == 1 and stranded in done.err, done.err
        running["spec"]["replicaSpecs"][0]["replicas"] = 2
        done = await apply(kubectl, tmp_path, running)
        assert done.code == 1 and stranded in done.err, done.err
        got = await kubectl.ok("get", "genericjob", "edited", "-o", "jsonpath={.spec.replicaSpecs[0].replicas}")
        assert got.out == "3"
        running["spec"]["failureRules"] = [{"worker": [1]}]  # the rule edited with the scale-down: valid
        assert "configured" in (await apply(kubectl, tmp_path, running)).check().out
        go.touch()
        await local.line(r"edited\s+Succeeded")


async def test_the_webhook_serves_on_the_port_chosen_and_the_cluster_calls_it_there(tmp_path):
    with socket.socket() as probe:  # a port free now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with LocalRun(tmp_path, "--port", "0", "--webhook-port", str(port)) as local:
        await local.line(rf"^admission webhook: https://127\.0\.0\.1:{port} ")
        kubectl = Kubectl(local.kubeconfig, tmp_path)
        endpoints = await kubectl.ok("get", "endpointslice", f"{SERVICE}-local", "-n", NAMESPACE, "-o",
                                     "jsonpath={.ports[0].port}")
        assert endpoints.out == str(port)
        done = await apply(kubectl, tmp_path, generic("unknown-type", failureRules=[{"chief": [0]}]))
        assert done.code == 1 and 'spec.failureRules[0]: replica type "chief" is not in' in done.err, done.err


async def test_no_webhook_admits_an_invalid_job_and_the_controller_fails_it(tmp_path):
    async with LocalRun(tmp_path, "--port", "0", "--no-webhook") as local:
        assert "its admission webhook off (--no-webhook)" in (await local.line(r"^ready: ")).string
        assert not [line for line in local.lines if line.startswith("admission webhook: ")]
        kubectl = Kubectl(local.kubeconfig, tmp_path)
        assert (await kubectl.run("get", "validatingwebhookconfiguration", CONFIGURATION)).code == 1
        (await apply(kubectl, tmp_path, generic("unknown-type", failureRules=[{"chief": [0]}]))).check()
        await until(lambda: phase(kubectl, "unknown-type"), what="a phase")
        await local.line(r"unknown-type\s+Failed")
        assert await failed_reason(kubectl, "unknown-type") == "InvalidSpec"


@contextlib.asynccontextmanager
async def dead_port():
    """A port nothing listens on (bound, then closed; held for the test by nothing else)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    yield port


@contextlib.asynccontextmanager
async def hanging_port():
    """A listener that accepts and never answers: the TLS handshake waits until the caller gives up."""
    held: list[asyncio.StreamWriter] = []

    async def accept(_reader, writer):
        held.append(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_a_webhook_down_or_hanging_under_both_failure_policies(tmp_path):
    async with LocalRun(tmp_path, "--port", "0") as local, dead_port() as dead, hanging_port() as hanging:
        kubectl = Kubectl(local.kubeconfig, tmp_path)
        ns = ["-n", NAMESPACE]
        await kubectl.ok("patch", "validatingwebhookconfiguration", CONFIGURATION, "--type=json", "-p", json.dumps(
            [{"op": "replace", "path": "/webhooks/0/timeoutSeconds", "value": 1}]))
        for port, failure in ((dead, "connect: connection refused"), (hanging, "context deadline exceeded")):
            await kubectl.ok("patch", "endpoints", SERVICE, *ns, "--type=json", "-p", json.dumps(
                [{"op": "replace", "path": "/subsets/0/ports/0/port", "value": port}]))
            await kubectl.ok("patch", "endpointslice", f"{SERVICE}-local", *ns, "--type=json", "-p", json.dumps(
                [{"op": "replace", "path": "/ports/0/port", "value": port}]))
            await kubectl.ok("patch", "validatingwebhookconfiguration", CONFIGURATION, "--type=json", "-p",
                             policy("Fail"))
            done = await apply(kubectl, tmp_path, generic(f"valid-{port}"))
            assert done.code == 1, done.out
            assert 'failed calling webhook "genericjobs.batch.tensorstack.dev": failed to call webhook: Post ' \
                   f'"https://{SERVICE}.{NAMESPACE}.svc:443/validate-batch-tensorstack-dev-v1beta1-genericjob' \
                   f'?timeout=1s": ' in done.err and failure in done.err, done.err
            await kubectl.ok("patch", "validatingwebhookconfiguration", CONFIGURATION, "--type=json", "-p",
                             policy("Ignore"))
            invalid = f"invalid-{port}"
            (await apply(kubectl, tmp_path, generic(invalid, failureRules=[{"chief": [0]}]))).check()
            await local.line(rf"{invalid}\s+Failed")
            assert await failed_reason(kubectl, invalid) == "InvalidSpec"


def policy(value: str) -> str:
    return json.dumps([{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": value}])
