"""Write the Grafana dashboard of the controller's metrics (the metrics table of docs/operations.md).

    python scripts/make_dashboard.py

writes manifests/components/monitoring/dashboard.json (the Helm chart links to it). The JSON is
what is shipped and tested (tests/program/test_monitoring.py parses every query); this script is
only the readable source of it: edit the panels here, then run it.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "manifests" / "components" / "monitoring" / "dashboard.json"

# Every query is scoped to the controller's namespace (the scrape target's `namespace` label).
NS = 'namespace="$namespace"'
Q = f'{NS}, name="genericjob"'  # the work queue
C = f'{NS}, controller="genericjob"'  # the reconciler
RATE = "$__rate_interval"

# (row title, [(panel title, unit, kind, [(legend, expr)])])
ROWS: list[tuple[str, list[tuple[str, str, str, list[tuple[str, str]]]]]] = [
    ("Controller", [
        ("Leader (1 = holds the lease)", "short", "stat", [
            ("{{pod}}", f'max by (pod) (leader_election_master_status{{{NS}, name="genericjob-controller"}})'),
        ]),
        ("Reconciles by result", "ops", "timeseries", [
            ("{{result}}", f"sum by (result) (rate(controller_runtime_reconcile_total{{{C}}}[{RATE}]))"),
        ]),
        ("Reconcile errors", "ops", "timeseries", [
            ("errors", f"sum(rate(controller_runtime_reconcile_errors_total{{{C}}}[{RATE}]))"),
        ]),
        ("Reconcile time", "s", "timeseries", [
            (f"p{q}", f"histogram_quantile(0.{q}, sum by (le) "
                      f"(rate(controller_runtime_reconcile_time_seconds_bucket{{{C}}}[{RATE}])))")
            for q in ("50", "99")
        ]),
        ("Workers busy", "short", "timeseries", [
            ("{{pod}} active", f"sum by (pod) (controller_runtime_active_workers{{{C}}})"),
            ("max", f"max(controller_runtime_max_concurrent_reconciles{{{C}}})"),
        ]),
    ]),
    ("Work queue", [
        ("Depth", "short", "timeseries", [
            ("{{pod}}", f"sum by (pod) (workqueue_depth{{{Q}}})"),
        ]),
        ("Adds and retries", "ops", "timeseries", [
            ("adds", f"sum(rate(workqueue_adds_total{{{Q}}}[{RATE}]))"),
            ("retries", f"sum(rate(workqueue_retries_total{{{Q}}}[{RATE}]))"),
        ]),
        ("Wait in queue and work time (p99)", "s", "timeseries", [
            ("queue", f"histogram_quantile(0.99, sum by (le) (rate(workqueue_queue_duration_seconds_bucket{{{Q}}}"
                      f"[{RATE}])))"),
            ("work", f"histogram_quantile(0.99, sum by (le) (rate(workqueue_work_duration_seconds_bucket{{{Q}}}"
                     f"[{RATE}])))"),
        ]),
        ("Longest running and unfinished work", "s", "timeseries", [
            ("longest {{pod}}", f"max by (pod) (workqueue_longest_running_processor_seconds{{{Q}}})"),
            ("unfinished {{pod}}", f"sum by (pod) (workqueue_unfinished_work_seconds{{{Q}}})"),
        ]),
    ]),
    ("Informers", [
        ("Seconds since proof the view is current", "s", "timeseries", [
            ("{{pod}} {{resource}}", f"max by (pod, resource) (informer_last_sync_age_seconds{{{NS}}})"),
        ]),
        ("Synced (1 = cache filled)", "short", "timeseries", [
            ("{{pod}} {{resource}}", f"min by (pod, resource) (informer_synced{{{NS}}})"),
        ]),
        ("Objects in cache", "short", "timeseries", [
            ("{{resource}}", f"max by (resource) (informer_objects{{{NS}}})"),
        ]),
        ("Watch events", "ops", "timeseries", [
            ("{{resource}} {{type}}", f"sum by (resource, type) (rate(informer_events_total{{{NS}}}[{RATE}]))"),
        ]),
        ("Relists, errors, restarts", "ops", "timeseries", [
            ("relists {{resource}}", f"sum by (resource) (rate(informer_relists_total{{{NS}}}[{RATE}]))"),
            ("errors {{resource}}", f"sum by (resource) (rate(informer_errors_total{{{NS}}}[{RATE}]))"),
            ("restarts {{resource}}", f"sum by (resource) (rate(informer_restarts_total{{{NS}}}[{RATE}]))"),
        ]),
    ]),
    ("API server", [
        ("Requests by code", "reqps", "timeseries", [
            ("{{code}}", f"sum by (code) (rate(rest_client_requests_total{{{NS}}}[{RATE}]))"),
        ]),
        ("Request latency (p99) by verb", "s", "timeseries", [
            ("{{verb}}", f"histogram_quantile(0.99, sum by (verb, le) "
                         f"(rate(rest_client_request_duration_seconds_bucket{{{NS}}}[{RATE}])))"),
        ]),
    ]),
    ("GenericJobs", [
        ("Jobs by phase (leader)", "short", "timeseries", [
            ("{{phase}}", f"max by (phase) (genericjob_jobs{{{NS}}})"),
        ]),
        ("Created, succeeded, failed, restarted", "ops", "timeseries", [
            ("created", f"sum(rate(genericjob_jobs_created_total{{{NS}}}[{RATE}]))"),
            ("succeeded", f"sum(rate(genericjob_jobs_succeeded_total{{{NS}}}[{RATE}]))"),
            ("failed", f"sum(rate(genericjob_jobs_failed_total{{{NS}}}[{RATE}]))"),
            ("replica restarts", f"sum(rate(genericjob_jobs_restarted_total{{{NS}}}[{RATE}]))"),
        ]),
        ("Pod phase to status write (p50, p99)", "s", "timeseries", [
            (f"p{q}", f"histogram_quantile(0.{q}, sum by (le) "
                      f"(rate(genericjob_status_latency_seconds_bucket{{{NS}}}[{RATE}])))")
            for q in ("50", "99")
        ]),
        ("Events sent and dropped", "ops", "timeseries", [
            ("{{result}}", f"sum by (result) (rate(genericjob_events_total{{{NS}}}[{RATE}]))"),
            ("pending", f"sum(genericjob_events_pending{{{NS}}})"),
        ]),
    ]),
    ("Process", [
        ("Memory (RSS)", "bytes", "timeseries", [
            ("{{pod}}", f"max by (pod) (process_resident_memory_bytes{{{NS}}})"),
        ]),
        ("CPU", "percentunit", "timeseries", [
            ("{{pod}}", f"sum by (pod) (rate(process_cpu_seconds_total{{{NS}}}[{RATE}]))"),
        ]),
    ]),
]

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def panel(panel_id: int, title: str, unit: str, kind: str, queries: list[tuple[str, str]], x: int, y: int) -> dict:
    return {
        "id": panel_id,
        "type": kind,
        "title": title,
        "datasource": DATASOURCE,
        "gridPos": {"h": 8, "w": 8, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom"}} if kind == "timeseries" else {},
        "targets": [{"refId": chr(ord("A") + i), "datasource": DATASOURCE, "expr": expr, "legendFormat": legend}
                    for i, (legend, expr) in enumerate(queries)],
    }


def dashboard() -> dict:
    panels, panel_id, y = [], 1, 0
    for title, row in ROWS:
        panels.append({"id": panel_id, "type": "row", "title": title, "collapsed": False,
                       "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []})
        panel_id, y = panel_id + 1, y + 1
        for i, spec in enumerate(row):
            panels.append(panel(panel_id, *spec, x=(i % 3) * 8, y=y + (i // 3) * 8))
            panel_id += 1
        y += ((len(row) + 2) // 3) * 8
    return {
        "uid": "genericjob-controller",
        "title": "GenericJob controller",
        "tags": ["genericjob", "kubernetes", "controller"],
        "timezone": "browser",
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [
            {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
             "current": {}, "hide": 0},
            {"name": "namespace", "label": "Namespace", "type": "query", "datasource": DATASOURCE,
             "query": {"query": "label_values(leader_election_master_status, namespace)", "refId": "namespace"},
             "definition": "label_values(leader_election_master_status, namespace)", "refresh": 2,
             "current": {}, "hide": 0, "sort": 1},
        ]},
        "annotations": {"list": []},
        "panels": panels,
    }


def main() -> None:
    TARGET.write_text(json.dumps(dashboard(), indent=2) + "\n")
    print(f"wrote {TARGET.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
