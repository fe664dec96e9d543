"""`genericjob-controller local --metrics-address`: the controller's /metrics during a local run, as `run` serves it.

Run as a user runs it (in the background, a job applied with kubectl, the page scraped over HTTP), in the test's
process (local_inprocess.py); synchronised on its output lines, never on sleeps.
"""

from __future__ import annotations

import re

import aiohttp
import pytest
from prometheus_client import enable_created_metrics

from localcluster.testing import Kubectl

from .local_inprocess import LocalRun, run_in_process
from .subprocesses import ROOT, Samples
from .test_local_cli import listening

pytestmark = pytest.mark.slow  # each test runs local's pods

EXAMPLE = ROOT / "examples" / "generic-example.yaml"


async def scrape(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


async def test_metrics_are_the_controllers_page_during_a_local_run(tmp_path):
    # The *_created series are switched off process-wide (prometheus_client's global): on again as a process starts,
    # so that their absence below is the run's doing, not an earlier test's in this process.
    enable_created_metrics()
    async with LocalRun(tmp_path, "--port", "0", "--metrics-address", ":0") as running:
        url = (await running.line(r"^controller metrics: (http://127\.0\.0\.1:\d+/metrics)$"))[1]
        await Kubectl(running.kubeconfig, tmp_path).ok("apply", "-f", str(EXAMPLE))
        await running.line(r"^\S+  finished: generic-example\s+Succeeded")
        status, text = await scrape(url)
    assert status == 200, text
    page = Samples(text)
    # The engine's, the runtime's and the client's series, each kind's controller named, as under `run`.
    assert page.value("genericjob_jobs_succeeded_total", kind="GenericJob", namespace="default") == 1
    assert page.value("controller_runtime_reconcile_total", controller="genericjob") > 0
    assert page.value("controller_runtime_reconcile_total", controller="tensorflowtrainingjob") == 0
    assert page.value("rest_client_requests_total", verb="create", resource="pods", code="201") == 4  # its 4 pods
    assert "process_cpu_seconds_total" in page.names
    assert not any(name.endswith("_created") for name in page.names)


async def test_metrics_off_by_default(tmp_path):
    async with LocalRun(tmp_path, "--port", "0") as running:
        assert not any(line.startswith("controller metrics:") for line in running.lines)


async def test_metrics_beyond_loopback_are_served_with_a_warning(tmp_path):
    async with LocalRun(tmp_path, "--port", "0", "--metrics-address", "0.0.0.0:0") as running:
        warning = await running.line(r"^WARNING: serving /metrics on 0\.0\.0\.0:0, not a loopback address, without "
                                     r"authentication")
        port = (await running.line(r"^controller metrics: http://0\.0\.0\.0:(\d+)/metrics$"))[1]
        status, text = await scrape(f"http://127.0.0.1:{port}/metrics")
    assert warning and status == 200 and "controller_runtime_reconcile_total" in text


def test_a_bad_or_taken_metrics_address_is_one_error_line(tmp_path):
    done = run_in_process(tmp_path, "--port", "0", "--metrics-address", "nowhere")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1].endswith(
        "argument --metrics-address: invalid address 'nowhere': expected host:port or :port"), done.stderr
    with listening() as taken:
        done = run_in_process(tmp_path, "--port", "0", "--metrics-address", f":{taken}")
    assert done.returncode == 2, done.stdout + done.stderr
    assert re.fullmatch(rf"genericjob-controller local: error: cannot serve metrics on 127\.0\.0\.1:{taken}: "
                        r"Address already in use \(--metrics-address chooses where; port 0 picks a free one\)",
                        done.stderr.strip().splitlines()[-1]), done.stderr
