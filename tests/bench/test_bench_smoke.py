"""The scale benchmark suite at tiny sizes, so that it cannot rot: every scenario runs, every figure is there.

Each scenario (`--only`) runs as a test of its own, so that they run side by side; burst and floor run together
(their overhead ratios need both), their --qps-limited bursts in one test and their unlimited ones in another."""

from __future__ import annotations

import json

import pytest

from bench.scale.__main__ import SCENARIOS, main
from bench.scale.__main__ import parse as main_args

# kopf comes with the `bench` extra that `make test` installs
TINY = ["--jobs", "6", "--replicas", "2", "--qps", "50", "--repeat", "2",
        "--cold-jobs", "5", "--cold-replicas", "3", "--idle-jobs", "3", "--idle-seconds", "1",
        "--latency-jobs", "3", "--latency-replicas", "2", "--latency-rate", "20", "--timeout", "30",
        "--strangers", "40", "--stranger-jobs", "2"]


def bursts(results: dict) -> dict[tuple[str, float], dict]:
    return {(b["actor"], b["qps"]): b for b in results["bursts"]}


def check_limited_bursts(results: dict, out: str) -> None:
    found = bursts(results)
    assert set(found) == {("controller", 50.0), ("floor", 50.0)}
    for key in found:
        assert found[key]["failed_jobs"] == 0
        assert found[key]["requests_per_job"]["create pods"] >= 2
        assert found[key]["peak_rss_mib"] > 0
    assert set(results["ratios"]) >= {"qps=50 (all Succeeded)"}
    assert "overhead ratio" in out


def check_unlimited_bursts(results: dict, out: str) -> None:
    found = bursts(results)
    assert set(found) == {("controller", 0.0), ("floor", 0.0)}
    for key in found:
        assert found[key]["failed_jobs"] == 0
        assert found[key]["requests_per_job"]["create pods"] >= 2
        assert found[key]["peak_rss_mib"] > 0
    assert 2 + 2 + 1 <= found[("floor", 0.0)]["writes_per_job"] <= 2 + 2 + 3  # pods, services, a write per phase
    for actor in ("controller", "floor"):  # unlimited bursts are repeated, the median reported
        runs = found[(actor, 0.0)]["runs"]
        assert len(runs) == 2 and found[(actor, 0.0)]["all_done_s"] in [r["all_done_s"] for r in runs]
    assert set(results["ratios"]) >= {"qps=0 (all Succeeded)"}
    assert "overhead ratio" in out


def check_peer(results: dict, out: str) -> None:
    kopf = bursts(results)[("kopf", 0.0)]
    assert kopf["failed_jobs"] == 0
    runs = kopf["runs"]  # unlimited bursts are repeated, the median reported
    assert len(runs) == 2 and kopf["all_done_s"] in [r["all_done_s"] for r in runs]


def check_mix(results: dict, out: str) -> None:
    mix = bursts(results)[("controller mix", 0.0)]  # the three kinds in turn, one process
    assert mix["failed_jobs"] == 0 and mix["requests_per_job"]["create pods"] == 2
    assert mix["requests_per_job"]["update tensorflowtrainingjobs/status"] > 0
    assert mix["requests_per_job"]["update pytorchtrainingjobs/status"] > 0


def check_cold(results: dict, out: str) -> None:
    # 15 Services of the jobs' replicas, and the apiserver's own `kubernetes` Service in default.
    assert (results["cold"]["jobs"], results["cold"]["pods"], results["cold"]["services"]) == (5, 15, 15 + 1)
    assert results["cold"]["writes"] == 0


def check_idle(results: dict, out: str) -> None:
    assert results["idle"]["writes"] == 0 and results["idle"]["watch_renewals"] == 0
    assert set(results["idle"]["requests"]) <= {"update leases", "get leases"}  # leader election, as deployed


def check_latency(results: dict, out: str) -> None:
    assert results["latency"]["samples"] > 0


def check_strangers(results: dict, out: str) -> None:
    none, many = results["strangers"]["runs"]  # the controller's RSS with unrelated pods and without
    assert (none["strangers"], many["strangers"], many["stranger_services"]) == (0, 40, 4)
    assert none["rss_mib"] > 0 and many["rss_mib"] > 0 and "rss_delta_mib" in results["strangers"]
    assert "unrelated" in out


RUNS = {  # test id -> the flags that choose its scenarios (after TINY's), what its results must show
    # burst and floor together (their overhead ratios need both): the --qps 50 bursts alone (no unlimited one)...
    "burst,floor-qps50": (["--only", "burst,floor", "--repeat", "0"], check_limited_bursts),
    # ... and the unlimited ones alone (no --qps-limited one), repeated.
    "burst,floor-qps0": (["--only", "burst,floor", "--qps", "0"], check_unlimited_bursts),
    "peer": (["--only", "peer"], check_peer),
    "mix": (["--only", "mix"], check_mix),
    "cold": (["--only", "cold"], check_cold),
    "idle": (["--only", "idle"], check_idle),
    "latency": (["--only", "latency"], check_latency),
    "strangers": (["--only", "strangers"], check_strangers),
}


def test_every_scenario_is_run():
    chosen = [main_args([*TINY, *flags]) for flags, _ in RUNS.values()]
    assert {scenario for args in chosen for scenario in args.only.split(",")} == set(SCENARIOS)
    limits = {args.qps > 0 and args.repeat == 0 for args in chosen if "burst" in args.only}
    assert limits == {True, False}  # the limited bursts and the unlimited ones, each in a test of its own


@pytest.mark.slow  # runs the programs (the controller, kopf's)
@pytest.mark.timeout(180)
@pytest.mark.parametrize("run", list(RUNS))
def test_every_scenario_runs_at_tiny_sizes(run, tmp_path, capsys):
    flags, check = RUNS[run]
    out = tmp_path / "bench.json"
    results = main([*TINY, *flags, "--json", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(results))
    check(results, capsys.readouterr().out)
