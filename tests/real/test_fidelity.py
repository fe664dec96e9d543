"""Differential fidelity: the corpus (corpus.py and corpus_informers.py, over 300 requests) sent to localcluster
and to the real API server, each answer summarised (normalise.py) and compared. Every difference is fixed in
localcluster or listed, with its reason, in differences.py."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from localcluster import LocalCluster
from tests.e2e.conftest import CRDS
from tests.real.cluster import RealCluster
from tests.real.corpus import Request, corpus
from tests.real.corpus_admission import admission
from tests.real.corpus_informers import NOBODY, informers
from tests.real.differences import DIFFERENCES
from tests.real.envtest import USERS
from tests.real.http import Http
from tests.real.normalise import summary

pytestmark = pytest.mark.real
NOBODY_TOKEN = next(token for token, (user, _) in USERS.items() if user == NOBODY)


def requests() -> list[Request]:
    return corpus() + informers() + admission()


async def answers(config: dict) -> dict[str, dict]:
    """Each request's answer from the server of kubeconfig `config`, as the admin or as nobody; `{continue}` and
    `{rv}` in params become the last list's continue token and resourceVersion, `{rv of NAME}` the resourceVersion
    of the list named NAME."""
    found = {}
    last: dict[str, str] = {"continue": "", "rv": ""}
    listed_at: dict[str, str] = {}
    admin = Http.from_kubeconfig(config)
    clients = {None: admin, NOBODY: Http(admin.url, admin.ca_pem, NOBODY_TOKEN),
               "bad-token": Http(admin.url, admin.ca_pem, "no-such-token")}
    async with contextlib.AsyncExitStack() as stack:
        for client in clients.values():
            await stack.enter_async_context(client)
        for request in requests():
            params = {k: last[v[1:-1]] if v in ("{continue}", "{rv}") else listed_at[v[7:-1]] if v.startswith(
                "{rv of ") else v for k, v in (request.params or {}).items()}
            code, body = await send(clients[request.user], request, params)
            if code == 200 and body and "items" in body:
                last = {"continue": body["metadata"].get("continue") or "", "rv": body["metadata"]["resourceVersion"]}
                listed_at[request.name] = last["rv"]
            found[request.name] = summary(code, body)
    return found


async def send(client: Http, request: Request, params: dict) -> tuple[int, dict | None]:
    """One request's answer; a `settle` request's once it is not 403 (or after 10 s)."""
    deadline = asyncio.get_running_loop().time() + 10
    while True:
        code, body = await client.request(request.method, request.path, request.body, request.content_type, params,
                                          request.raw)
        if not (request.settle and code == 403 and asyncio.get_running_loop().time() < deadline):
            return code, body
        await asyncio.sleep(0.05)


async def test_the_corpus_is_answered_alike_by_both_servers(envtest):
    assert len(requests()) >= 300
    async with RealCluster(envtest) as real:
        await real.apply_crds(CRDS)
        real_answers = await answers(envtest.plane.kubeconfig())
    async with LocalCluster(runner="none") as local:
        local.apply_crds(CRDS)
        local.add_token(NOBODY_TOKEN, NOBODY)
        local_answers = await answers(local.kubeconfig())
    differ = {name: (local_answers[name], real_answers[name]) for name in real_answers
              if local_answers[name] != real_answers[name]}
    unlisted = {name: pair for name, pair in differ.items() if name not in DIFFERENCES}
    assert not unlisted, "\n".join(f"{name}:\n  local {pair[0]}\n  real  {pair[1]}" for name, pair in unlisted.items())
    fixed = sorted(set(DIFFERENCES) - set(differ))
    assert not fixed, f"no longer differ (remove them from differences.py): {fixed}"
