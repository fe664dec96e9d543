"""Liveness that sees a blind controller (issue 12, fault 2): --informer-stale-after and /healthz.

The cluster sends bookmarks every second, so a working informer hears from its watch at least that
often; one whose watches all fail has no proof its cache is current, and /healthz names it once
that lasts longer than the flag's value.
"""

from __future__ import annotations

import dataclasses
import time

import pytest

from controller.cmd import cli
from controller.kinds.genericjob.models import API
from controller.runtime.controller import INFORMER_STALE_AFTER
from controller.runtime.manager import Manager

from .inprocess import Running, cluster_with_crds, manager_config
from .subprocesses import until

pytestmark = pytest.mark.slow  # runs long: a controller in-process waits out relists (4 s a test, loaded)

UID_LABEL = API.children_selector  # what the child informers select on
STALE = f"informer services with labels {UID_LABEL}: no list or watch event for"

STALE_AFTER = 3.0


@pytest.fixture
async def cluster():
    async with cluster_with_crds() as running:
        yield running


def config(stale_after: float):
    made = manager_config()
    return dataclasses.replace(made, controller=dataclasses.replace(made.controller, informer_stale_after=stale_after))


@pytest.fixture
async def running(rest_client, request):
    made = Running(Manager(rest_client, config(getattr(request, "param", STALE_AFTER))))
    yield made
    if made.task is not None and not made.task.done():
        assert await made.stop() == 0
    await made.close()


def test_the_flag_and_its_default():
    assert cli.manager_config(cli.parse_args(["run", "--no-leader-elect"], {})).controller.informer_stale_after == \
        INFORMER_STALE_AFTER == 300.0
    args = cli.parse_args(["run", "--no-leader-elect", "--informer-stale-after", "0"], {})
    assert cli.manager_config(args).controller.informer_stale_after == 0.0
    env = {"GENERICJOB_INFORMER_STALE_AFTER": "45"}
    assert cli.manager_config(cli.parse_args(["run", "--no-leader-elect"], env)).controller.informer_stale_after == 45


async def test_healthz_fails_while_an_informer_cannot_watch_and_recovers(cluster, running):
    await running.start()
    await running.answers("/readyz", 200)
    services = running.manager.controller.services
    # Watches of services now fail (500), those of everything else keep working.
    cluster.faults.configure(error_rate=1.0, verbs=["watch"], resources=["services"])
    cluster.drop_watches()
    blind_from = time.monotonic()
    _, text = await running.answers("/healthz", 500, f"informer services with labels {UID_LABEL}: no list or watch "
                                                     "event for")
    assert time.monotonic() - blind_from >= STALE_AFTER - 1.0  # not before the flag's value (less a bookmark)
    assert text.count("\n") == 1  # only the blind one is named
    assert f"more than --informer-stale-after {STALE_AFTER:g} s" in text and "500" in text  # and why
    assert services.stats.sync_age() > STALE_AFTER
    assert (await running.get("/readyz"))[0] == 200  # liveness, not readiness: a restart is what helps
    cluster.faults.clear()
    await running.answers("/healthz", 200, "ok")
    assert services.stats.sync_age() < STALE_AFTER


async def test_healthz_fails_on_a_relist_loop(cluster, running):
    """Issue 12's blind controller: each relist succeeds, each watch after it gets 410."""
    await running.start()
    await running.answers("/readyz", 200)
    services = running.manager.controller.services
    cluster.faults.configure(error_rate=1.0, error_code=410, verbs=["watch"], resources=["services"])
    cluster.drop_watches()
    _, text = await running.answers("/healthz", 500, f"informer services with labels {UID_LABEL}: no list or watch "
                                                     "event for")
    assert "410" in text and services.stats.relists >= 2
    cluster.faults.clear()
    await running.answers("/healthz", 200, "ok")


@pytest.mark.parametrize("running", [0.0], indirect=True)
async def test_zero_turns_the_rule_off(cluster, running):
    await running.start()
    await running.answers("/readyz", 200)
    services = running.manager.controller.services
    cluster.faults.configure(error_rate=1.0, verbs=["watch"], resources=["services"])
    cluster.drop_watches()
    await until(lambda: services.stats.sync_age() > STALE_AFTER, what="a stale services informer")
    assert await running.get("/healthz") == (200, "ok\n")


async def test_an_informer_that_never_listed_is_readiness_business(cluster, running):
    cluster.faults.configure(error_rate=1.0, verbs=["list"], resources=["services"])
    started = time.monotonic()
    await running.start()
    services = running.manager.controller.services
    await until(lambda: time.monotonic() - started > STALE_AFTER + 0.5 and services.stats.errors >= 3,
                what="failed lists for longer than the flag's value")
    assert services.stats.sync_age() is None
    assert await running.get("/healthz") == (200, "ok\n")
    assert (await running.get("/readyz"))[0] == 500
    cluster.faults.clear()
