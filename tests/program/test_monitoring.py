"""The alerts (PrometheusRule), the Grafana dashboard and docs/operations.md's PromQL examples: every query
parses as PromQL and names only metrics the controller exports.

The exported names are read from a running controller: a Manager under leader election, serving the admission
webhook (its own certificates), with the request-counting API client, run in-process against localcluster through
a job's whole life, its registry rendered exactly as /metrics renders it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path

import promql_parser
import pytest
import yaml
from kubernetes_asyncio import config
from kubernetes_asyncio.client import ApiClient, Configuration
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from controller.jobs.schema.admission import make_webhook
from controller.kinds.genericjob.kind import GENERICJOB
from controller.runtime.leader import LeaderElectionConfig
from controller.runtime.manager import Manager, new_registry
from controller.runtime.metrics import RequestMetrics
from controller.runtime.webhook_certs import CertKeeperConfig
from controller.runtime.webhook_server import WebhookConfig
from kubeclient.from_configuration import settings_from_configuration
from kubeclient.rest import RestClient
from tests.e2e.conftest import QUICK, Jobs, genericjob

from .inprocess import Running, cluster_with_crds, manager_config
from .subprocesses import until

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "manifests" / "components" / "monitoring"

# Metrics the alerts and dashboard use that another branch of issue 12 adds to the controller: name ->
# where it comes from. The test accepts them while the controller does not export them yet, and fails
# once it does, so that the entry is removed and the name is checked like every other.
PENDING: dict[str, str] = {}
# Standard process metrics of prometheus_client's ProcessCollector: exported, not in the README's table.
STANDARD_PREFIXES = ("process_",)

# Grafana's variables, replaced by what a query sees once Grafana has expanded them.
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h", "$namespace": "genericjob-system"}


def alert_expressions() -> dict[str, str]:
    rule = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())
    exprs = {}
    for group in rule["spec"]["groups"]:
        for item in group["rules"]:
            exprs[f"alert {item.get('alert') or item.get('record')}"] = item["expr"]
    return exprs


def grafana(expr: str) -> str:
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    assert "$" not in expr, f"an unknown Grafana variable in {expr!r}"
    return expr


def dashboard_expressions() -> dict[str, str]:
    dashboard = json.loads((MONITORING / "dashboard.json").read_text())
    exprs = {}
    for panel in dashboard["panels"]:
        for target in panel.get("targets", ()):
            exprs[f"panel {panel['title']!r} {target['refId']}"] = grafana(target["expr"])
    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
        # label_values(<series selector>, <label>): Grafana's, not PromQL; its selector is PromQL.
        match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", query)
        assert match, f"variable {variable['name']}: unexpected query {query!r}"
        exprs[f"variable {variable['name']}"] = grafana(match.group(1))
    return exprs


def docs_expressions() -> dict[str, str]:
    """docs/operations.md's ```promql examples."""
    text = (ROOT / "docs" / "operations.md").read_text()
    blocks = re.findall(r"^```promql\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert blocks, "docs/operations.md has no PromQL example any more: the webhook's monitoring had two"
    return {f"docs/operations.md query {i}": block.strip() for i, block in enumerate(blocks, 1)}


def expressions() -> dict[str, str]:
    found = {**alert_expressions(), **dashboard_expressions(), **docs_expressions()}
    assert len(found) > 20, "too few queries found: the files' layout changed?"
    return found


def metric_names(expr: str) -> set[str]:
    """The metric names an expression selects (by name or by a __name__ matcher)."""
    names: set[str] = set()

    def visit(node) -> None:
        if isinstance(node, promql_parser.MatrixSelector):
            node = node.vector_selector
        if isinstance(node, promql_parser.VectorSelector):
            if node.name:
                names.add(node.name)
            for matcher in node.matchers.matchers:
                if matcher.name == "__name__":
                    assert str(matcher.op).endswith("Equal") and "Not" not in str(matcher.op), \
                        f"a __name__ regex cannot be checked: {expr}"
                    names.add(matcher.value)

    promql_parser.walk(promql_parser.parse(expr), visit)
    assert names, f"no metric in {expr!r}"
    return names


@pytest.mark.parametrize(("where", "expr"), sorted(expressions().items()))
def test_every_query_parses(where, expr):
    try:
        promql_parser.parse(expr)
    except ValueError as err:
        pytest.fail(f"{where}: {err}\n{expr}")


def test_the_parser_refuses_what_prometheus_refuses():
    """So that the test above can fail: a typo in a function, a missing bracket, a range where an instant is due."""
    for bad in ("hitsogram_quantile(0.9, x)", "sum(rate(x[5m])", "rate(x[5m]) > y[5m]", "x{a=}"):
        with pytest.raises(ValueError):
            promql_parser.parse(bad)
    assert metric_names('rate(a_total{x="1"}[5m]) / on (x) b or {__name__="c"} or max_over_time(d[5m:1m])') == {
        "a_total", "b", "c", "d"}


def series_names(families) -> set[str]:
    """The series names a scrape can contain, from each family's name and type (a labelled metric
    with no child yet still has its HELP and TYPE lines)."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "summary": ("", "_sum", "_count"),
                "info": ("_info",), "gaugehistogram": ("_bucket", "_gsum", "_gcount")}
    return {family.name + suffix for family in families for suffix in suffixes.get(family.type, ("",))}


@pytest.fixture
async def exported() -> set[str]:
    async with cluster_with_crds() as cluster:
        cluster.api.ensure_namespace("genericjob-system")
        configuration = Configuration()
        await config.load_kube_config_from_dict(cluster.kubeconfig(), client_configuration=configuration)
        registry = new_registry()
        # As run_program builds it: the registry the /metrics endpoint serves, requests counted on it.
        async with ApiClient(configuration) as api_client, RestClient(
                settings_from_configuration(configuration), observer=RequestMetrics(registry)) as rest_client:
            election = LeaderElectionConfig("genericjob-controller", "genericjob-system", lease_duration=4.0,
                                            renew_deadline=3.0, retry_period=0.5)
            # As `run` serves it: the webhook on, its certificates kept in the Secret (no configuration to patch).
            webhook = WebhookConfig(port=0, host="127.0.0.1", keeper=CertKeeperConfig(namespace="genericjob-system"))
            served = dataclasses.replace(manager_config(leader_election=election), webhook=webhook,
                                         make_webhook=functools.partial(make_webhook, kinds=[GENERICJOB]))
            manager = Manager(rest_client, served, registry)
            running = Running(manager)
            try:
                await running.start()
                await running.answers("/readyz", 200)
                await until(lambda: registry.get_sample_value("leader_election_master_status",
                                                              {"name": "genericjob-controller"}) == 1, what="leading")
                jobs = Jobs(api_client)
                await jobs.submit(genericjob("scraped", {"worker": 1}, script=QUICK))
                await jobs.wait_phase("scraped", "Succeeded")
                families = list(text_string_to_metric_families(generate_latest(registry).decode()))
            finally:
                await running.close()
    names = series_names(families)
    assert {"controller_runtime_reconcile_total", "workqueue_depth", "leader_election_master_status",
            "rest_client_requests_total", "informer_synced", "controller_runtime_webhook_requests_total"} <= names, \
        sorted(names)
    return names


async def test_queries_name_only_metrics_the_controller_exports(exported):
    used: dict[str, set[str]] = {}
    for where, expr in expressions().items():
        for name in metric_names(expr):
            used.setdefault(name, set()).add(where)

    unknown = {name: sorted(where) for name, where in used.items() if name not in exported and name not in PENDING}
    assert not unknown, f"queries name metrics the controller does not export: {unknown}"
    now_exported = sorted(set(PENDING) & exported)
    assert not now_exported, f"remove {now_exported} from PENDING in {__file__}: the controller exports them now"
    unused = sorted(set(PENDING) - set(used))
    assert not unused, f"PENDING names no query uses: {unused}"

    # Built on the metrics the README documents (its metrics table), process metrics aside.
    readme = (ROOT / "docs" / "operations.md").read_text()  # the metrics table (README's, before issue 24)
    undocumented = sorted(name for name in used if not name.startswith(STANDARD_PREFIXES) and name not in PENDING
                          and re.sub(r"_(total|bucket|sum|count)$", "", name) not in readme)
    assert not undocumented, f"queries use metrics docs/operations.md does not list: {undocumented}"


def test_alerts_cover_what_platform_teams_page_on():
    """Reconcile errors, queue depth and latency, a blind informer (stale, never synced), no leader."""
    alerts = {where.removeprefix("alert "): metric_names(expr) for where, expr in alert_expressions().items()}
    covered = set().union(*alerts.values())
    assert {"controller_runtime_reconcile_errors_total", "workqueue_depth", "workqueue_queue_duration_seconds_bucket",
            "informer_last_sync_age_seconds", "informer_synced", "leader_election_master_status"} <= covered
    no_leader = alert_expressions()["alert GenericJobControllerNoLeader"]
    assert "absent(leader_election_master_status" in no_leader.replace(" ", ""), \
        "no leader must also fire when no replica reports at all"
    rule = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())
    for group in rule["spec"]["groups"]:
        for item in group["rules"]:
            assert item["labels"]["severity"] in {"warning", "critical"}
            assert item["annotations"]["summary"] and item["annotations"]["description"]
            assert re.fullmatch(r"\d+[smh]", item["for"])
