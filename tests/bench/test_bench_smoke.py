"""The scale benchmark suite at tiny sizes, so that it cannot rot: every scenario runs, every figure is there."""

from __future__ import annotations

import json

import pytest

from bench.scale.__main__ import main


@pytest.mark.timeout(180)
def test_every_scenario_runs_at_tiny_sizes(tmp_path, capsys):
    # kopf comes with the `bench` extra that `make test` installs
    only = "burst,floor,cold,idle,latency,peer,mix,strangers"
    out = tmp_path / "bench.json"
    results = main(["--jobs", "6", "--replicas", "2", "--qps", "50", "--repeat", "2",
                    "--cold-jobs", "5", "--cold-replicas", "3", "--idle-jobs", "3", "--idle-seconds", "1",
                    "--latency-jobs", "3", "--latency-replicas", "2", "--latency-rate", "20", "--timeout", "30",
                    "--strangers", "40", "--stranger-jobs", "2",
                    "--only", only, "--json", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(results))
    bursts = {(b["actor"], b["qps"]): b for b in results["bursts"]}
    for key in [("controller", 50.0), ("controller", 0.0), ("floor", 50.0), ("floor", 0.0)]:
        assert bursts[key]["failed_jobs"] == 0
        assert bursts[key]["requests_per_job"]["create pods"] >= 2
        assert bursts[key]["peak_rss_mib"] > 0
    assert 2 + 2 + 1 <= bursts[("floor", 0.0)]["writes_per_job"] <= 2 + 2 + 3  # pods, services, a write per phase
    assert bursts[("kopf", 0.0)]["failed_jobs"] == 0
    for actor in ("controller", "floor", "kopf"):  # unlimited bursts are repeated, the median reported
        runs = bursts[(actor, 0.0)]["runs"]
        assert len(runs) == 2 and bursts[(actor, 0.0)]["all_done_s"] in [r["all_done_s"] for r in runs]
    assert set(results["ratios"]) >= {"qps=50 (all Succeeded)", "qps=0 (all Succeeded)"}
    # 15 Services of the jobs' replicas, and the apiserver's own `kubernetes` Service in default.
    assert (results["cold"]["jobs"], results["cold"]["pods"], results["cold"]["services"]) == (5, 15, 15 + 1)
    assert results["cold"]["writes"] == 0
    assert results["idle"]["writes"] == 0 and results["idle"]["watch_renewals"] == 0
    assert set(results["idle"]["requests"]) <= {"update leases", "get leases"}  # leader election, as deployed
    assert results["latency"]["samples"] > 0
    mix = bursts[("controller mix", 0.0)]  # the three kinds in turn, one process
    assert mix["failed_jobs"] == 0 and mix["requests_per_job"]["create pods"] == 2
    assert mix["requests_per_job"]["update tensorflowtrainingjobs/status"] > 0
    assert mix["requests_per_job"]["update pytorchtrainingjobs/status"] > 0
    none, many = results["strangers"]["runs"]  # the controller's RSS with unrelated pods and without
    assert (none["strangers"], many["strangers"], many["stranger_services"]) == (0, 40, 4)
    assert none["rss_mib"] > 0 and many["rss_mib"] > 0 and "rss_delta_mib" in results["strangers"]
    out = capsys.readouterr().out
    assert "overhead ratio" in out and "unrelated" in out
