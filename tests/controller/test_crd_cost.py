"""The CEL rules of the project's CRDs fit the API server's cost budget with a wide margin, on every
supported Kubernetes version: each rule at most a tenth of the per-rule limit and each CRD at most a
tenth of the per-CRD limit, as apiextensions-apiserver estimates them (localcluster.crd).

`pytest -s` prints every rule's cost. A failure names the rule: give the strings it reads a maxLength,
the lists it iterates a maxItems, the maps a maxProperties (bounds the API itself has), or simplify it.
"""

from __future__ import annotations

import functools

import pytest
import yaml

from controller.jobs.schema.crd import MANIFEST_DIR
from controller.kinds import registry
from localcluster import crd as crd_tools
from localcluster.crd import K8S_1_24, K8S_1_28, K8S_1_35, WORST

pytestmark = pytest.mark.slow  # runs long: compiles and prices every CEL rule of the CRDs (14-17 s with -n 4, loaded)

FRACTION = 0.10  # of each budget: a margin of 10x for the estimator's changes between versions
CRDS = tuple(registry.crd_files())  # every kind's, and the PodGroup's


@functools.cache
def _text(name: str) -> str:
    return (MANIFEST_DIR / name).read_text()


def load(name: str) -> dict:
    return yaml.load(_text(name), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@pytest.mark.parametrize("estimator", [WORST, K8S_1_24, K8S_1_28, K8S_1_35], ids=lambda e: e.name)
@pytest.mark.parametrize("name", CRDS)
def test_rules_cost_a_tenth_of_the_budget_at_most(name, estimator):
    over = []
    for schema, costs in crd_tools.rule_costs(load(name), estimator, minimum=None):
        total = sum(cost.cost for cost in costs)
        print(f"\n{name} ({estimator.name}): {total:,} of {crd_tools.STATIC_ESTIMATED_CRD_COST_LIMIT:,}")
        for cost in costs:
            print(f"  {cost.cost:>12,} (x{cost.cardinality}) {cost.path.removeprefix(schema)}")
            assert not cost.error, cost
            if cost.cost > FRACTION * crd_tools.STATIC_ESTIMATED_COST_LIMIT:
                over.append(f"{cost.path}: {cost.cost:,} ({cost.rule[:80]})")
        if total > FRACTION * crd_tools.STATIC_ESTIMATED_CRD_COST_LIMIT:
            over.append(f"{schema}: all rules {total:,}")
    assert not over, "over a tenth of the budget:\n" + "\n".join(over)


@pytest.mark.parametrize("name", CRDS)
def test_the_crds_compile_on_the_minimum_version(name):
    """No rule calls what Kubernetes 1.28 lacks, and localcluster (which stands for 1.28) accepts them."""
    assert crd_tools.errors(load(name)) == []


@pytest.mark.parametrize("name", CRDS)
def test_every_string_list_and_map_a_rule_reads_is_bounded(name):
    """Bounded by the schema (maxLength, maxItems, maxProperties, or an enum from 1.29 on), not by the
    request size: the one exception is metadata.name, whose schema a CRD may restrict only at the cost of
    the name's own errors (the DNS-1035 rule reads it with two cheap scans instead)."""
    for _, costs in crd_tools.rule_costs(load(name), WORST):
        for cost in costs:
            assert set(cost.unbounded) <= {"self.metadata.name"}, (cost.path, cost.unbounded)


def test_the_check_of_bounds_sees_an_unbounded_read():
    """The old GenericJob CRD read `protocol`, an enum string with no maxLength."""
    import gzip
    from pathlib import Path

    old = yaml.safe_load(gzip.decompress((Path(__file__).parents[1] / "data" / "genericjob-dabcc66.yaml.gz")
                                         .read_bytes()))
    reads = {read for _, costs in crd_tools.rule_costs(old, WORST) for cost in costs for read in cost.unbounded}
    assert reads == {"self.@items.protocol", "self.metadata.name"}


def test_every_rule_is_costed():
    """The walk finds every x-kubernetes-validations rule of the files (none is left out of the sums)."""
    for name in CRDS:
        found = sum(1 for _, costs in crd_tools.rule_costs(load(name)) for cost in costs if cost.kind == "rule")
        assert found == sum(len(block) for block in _rule_lists(load(name))), name


def _rule_lists(node) -> list[list]:
    if isinstance(node, dict):
        own = [node["x-kubernetes-validations"]] if "x-kubernetes-validations" in node else []
        return own + [found for value in node.values() for found in _rule_lists(value)]
    if isinstance(node, list):
        return [found for value in node for found in _rule_lists(value)]
    return []
