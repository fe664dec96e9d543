"""`python -m localcluster serve`: starts, writes a working kubeconfig, installs CRDs, stops on SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio import client, config

from .test_crd import CRD

pytestmark = pytest.mark.slow  # each test runs `python -m localcluster serve`

CRDS = Path(__file__).resolve().parents[3] / "manifests" / "crds"


async def test_serve_writes_kubeconfig_and_installs_crds(tmp_path):
    crds = tmp_path / "crds"
    crds.mkdir()
    (crds / "widget.yaml").write_text(yaml.safe_dump(CRD))
    kubeconfig = tmp_path / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "localcluster", "serve", "--port", "0", "--kubeconfig-out", str(kubeconfig),
        "--runner", "scripted", "--crds", str(crds), stdout=asyncio.subprocess.PIPE)
    try:
        lines = []
        async with asyncio.timeout(20):
            while not lines or "listening on" not in lines[-1]:
                lines.append((await proc.stdout.readline()).decode())
        assert "installed CRD widgets.example.dev" in "".join(lines)
        configuration = client.Configuration()
        await config.load_kube_config(str(kubeconfig), client_configuration=configuration)
        async with client.ApiClient(configuration) as api:
            namespaces = await client.CoreV1Api(api).list_namespace()
            assert "default" in {n.metadata.name for n in namespaces.items}
            widgets = await client.CustomObjectsApi(api).list_cluster_custom_object("example.dev", "v1", "widgets")
            assert widgets["items"] == []
    finally:
        proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(10):
            assert await proc.wait() == 0


async def test_debug_logs_are_localclusters_own(tmp_path):
    # A GenericJob's create runs the CRD's CEL rules, whose library logs every step at debug.
    crds = CRDS
    kubeconfig = tmp_path / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "localcluster", "serve", "--port", "0", "--kubeconfig-out", str(kubeconfig),
        "--runner", "none", "--crds", str(crds), "--log-level", "debug",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        async with asyncio.timeout(20):
            while "listening on" not in (await proc.stdout.readline()).decode():
                pass
        configuration = client.Configuration()
        await config.load_kube_config(str(kubeconfig), client_configuration=configuration)
        job = {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "GenericJob", "metadata": {"name": "j"},
               "spec": {"replicaSpecs": [{"type": "worker", "replicas": 1, "template": {"spec": {"containers": [
                   {"name": "main", "image": "busybox", "command": ["true"]}]}}}]}}
        async with client.ApiClient(configuration) as api:
            await client.CustomObjectsApi(api).create_namespaced_custom_object(
                "batch.tensorstack.dev", "v1beta1", "default", "genericjobs", job)
    finally:
        proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(10):
            _, stderr = await proc.communicate()
    # Before: every step of the CEL library (celpy) and asyncio's selector, at debug.
    quiet = [line for line in stderr.decode().splitlines() if " DEBUG " in line or " INFO " in line]
    assert all(line.split(" ", 4)[3].startswith("localcluster") for line in quiet), quiet[:5]
