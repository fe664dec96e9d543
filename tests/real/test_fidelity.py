"""Differential fidelity: the corpus (corpus.py, over 300 requests) sent to localcluster and to the real API
server, each answer summarised (normalise.py) and compared. Every difference is fixed in localcluster or listed,
with its reason, in differences.py."""

from __future__ import annotations

import pytest

from localcluster import LocalCluster
from tests.e2e.conftest import CRDS
from tests.real.cluster import RealCluster
from tests.real.corpus import corpus
from tests.real.differences import DIFFERENCES
from tests.real.http import Http
from tests.real.normalise import summary

pytestmark = pytest.mark.real


async def answers(http: Http) -> dict[str, dict]:
    found = {}
    for request in corpus():
        code, body = await http.request(request.method, request.path, request.body, request.content_type,
                                        request.params, request.raw)
        found[request.name] = summary(code, body)
    return found


async def test_the_corpus_is_answered_alike_by_both_servers(envtest):
    assert len(corpus()) >= 300
    async with RealCluster(envtest.plane, envtest.baseline, envtest.kept_crds) as real:
        await real.apply_crds(CRDS)
        real_answers = await answers(real.http)
    async with LocalCluster(runner="none") as local:
        local.apply_crds(CRDS)
        async with Http.from_kubeconfig(local.kubeconfig()) as http:
            local_answers = await answers(http)
    differ = {name: (local_answers[name], real_answers[name]) for name in real_answers
              if local_answers[name] != real_answers[name]}
    unlisted = {name: pair for name, pair in differ.items() if name not in DIFFERENCES}
    assert not unlisted, "\n".join(f"{name}:\n  local {pair[0]}\n  real  {pair[1]}" for name, pair in unlisted.items())
    fixed = sorted(set(DIFFERENCES) - set(differ))
    assert not fixed, f"no longer differ (remove them from differences.py): {fixed}"
