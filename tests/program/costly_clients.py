"""Costly clients of the admission webhook (issue 47's second attack), run in a process of their own so that their
work is not the server's: `clients` connections that each post, one after another, reviews of the costliest shapes
a review can have within the 3 MiB body limit, for `seconds`. It prints one JSON object: the answers' statuses.

    python -m tests.program.costly_clients HOST PORT PATH CLIENTS SECONDS [SCALE]

It prints "ready" first, once its bodies are made. SCALE (1.0: bodies near 3 MiB) shrinks the large shapes.
Also here, for the server's side: `LoopLag`, a probe of the event loop's longest stall (a timer's lateness), and
`shapes`.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
import time
from collections import Counter
from collections.abc import Callable

import aiohttp
import orjson

from controller.runtime.costly_reviews import COSTLY_ITEMS, COSTLY_VARIABLES, costly

MAX_BODY = 3 * 1024 * 1024 - 16 * 1024  # under the webhook's limit, with room for the review's own fields


def job(replicas: dict[str, int], containers: list[dict] | None = None, **spec) -> dict:
    pod = {"spec": {"containers": containers or [{"name": "c", "image": "i"}]}}
    meta = {"name": "costly", "namespace": "default", "uid": "0b7e4f3c-0000-4000-8000-0000000000aa", "generation": 1}
    entries = [{"type": replica_type, "replicas": n, "template": pod} for replica_type, n in replicas.items()]
    return {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "GenericJob", "metadata": meta,
            "spec": {"replicaSpecs": entries, **spec}}


def review(obj: dict, old: dict | None = None, uid: str = "costly") -> dict:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": uid, "kind": {"group": "batch.tensorstack.dev", "version": "v1beta1", "kind": "GenericJob"},
        "resource": {"group": "batch.tensorstack.dev", "version": "v1beta1", "resource": "genericjobs"},
        "name": "costly", "namespace": "default", "operation": "UPDATE" if old else "CREATE", "object": obj,
        "oldObject": old, "dryRun": False, "userInfo": {"username": "mallory"}}}


def rules(n: int) -> dict:
    """Valid success rules: decoding and validating ~3 items each (issue 47's 250 KiB review had 17,036)."""
    return review(job({"worker": 8}, successRules=[{"worker": [i % 8]} for i in range(n)]))


def bad_ranks(n: int) -> dict:
    """One rule of n ranks out of range: an error (and an answer's cause) for each."""
    return review(job({"worker": 1}, successRules=[{"worker": list(range(1, n + 1))}]))


def replica_types(n: int) -> dict:
    return review(job({f"t{i}": 0 for i in range(n)} | {"worker": 1}))


def variables(n: int) -> dict:
    """Env vars whose values name two variables each, substituted when validated."""
    env = [{"name": f"E{i}", "value": "$(service.worker[0].host)$(rank)"} for i in range(n)]
    return review(job({"worker": 1}, [{"name": "c", "image": "i", "env": env}]))


def edited_rules(n: int) -> dict:
    """An UPDATE: the object and its old one, each half the body."""
    old = job({"worker": 8}, successRules=[{"worker": [i % 8]} for i in range(n)])
    new = {**old, "spec": {**old["spec"], "successRules": [*old["spec"]["successRules"], {"worker": [1]}]},
           "metadata": {**old["metadata"], "generation": 2}}
    return review(new, old)


def cheap_but_most(_: int) -> dict:
    """The costliest review still decided on the event loop: just under the counts (rules of 3 items; variables)."""
    env = [{"name": f"E{i}", "value": "$(service.worker[0].host)"} for i in range(COSTLY_VARIABLES - 4)]
    count = (COSTLY_ITEMS - 3 * len(env)) // 3  # 3 items a rule, 3 an env var; fewer for the review's own
    while costly(orjson.dumps(made := review(job({"worker": 8}, [{"name": "c", "image": "i", "env": env}],
                                                  successRules=[{"worker": [i % 8]} for i in range(count)])))):
        count -= 1
    return made


def fill(make: Callable[[int], dict], limit: int) -> bytes:
    """A body of `make(n)` just under `limit` bytes (n from the size of two small ones: they grow linearly)."""
    small, larger = len(orjson.dumps(make(100))), len(orjson.dumps(make(200)))
    count = 100 + int((limit - small) * 100 / (larger - small))
    while len(body := orjson.dumps(make(count))) > limit:
        count = count * 99 // 100
    return body


def shapes(scale: float = 1.0) -> dict[str, bytes]:
    """Each worst shape's body: near the 3 MiB limit times `scale`, issue 47's 250 KiB review, and the costliest
    review still decided on the loop."""
    limit = int(MAX_BODY * scale)
    made = {name: fill(make, limit) for name, make in [
        ("rules", rules), ("bad_ranks", bad_ranks), ("replica_types", replica_types), ("variables", variables),
        ("edited_rules", edited_rules)]}
    made["rules_250k"] = orjson.dumps(rules(17_036))
    made["cheap_but_most"] = orjson.dumps(cheap_but_most(0))
    return made


class LoopLag:
    """The event loop's longest stall while it runs: how late a 10 ms timer fires, at worst."""

    def __init__(self, period: float = 0.01) -> None:
        self.period, self.longest, self.samples = period, 0.0, 0
        self._task: asyncio.Task | None = None

    async def _probe(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            await asyncio.sleep(self.period)
            self.longest = max(self.longest, loop.time() - started - self.period)
            self.samples += 1

    async def __aenter__(self) -> LoopLag:
        self._task = asyncio.create_task(self._probe())
        return self

    async def __aexit__(self, *exc) -> None:
        assert self._task is not None
        self._task.cancel()


async def attack(url: str, clients: int, seconds: float, scale: float) -> dict:
    bodies = list(shapes(scale).items())
    print("ready", flush=True)  # the bodies are made (seconds): the attack starts
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    statuses: Counter[str] = Counter()
    deadline = time.monotonic() + seconds

    async def client(index: int, session: aiohttp.ClientSession) -> None:
        turn = index
        while time.monotonic() < deadline:
            name, body = bodies[turn % len(bodies)]
            turn += 1
            try:
                async with session.post(url, data=body, headers={"Content-Type": "application/json"},
                                        ssl=context) as answer:
                    await answer.read()
                    statuses[f"{name} {answer.status}"] += 1
            except aiohttp.ClientError as err:
                statuses[f"{name} {type(err).__name__}"] += 1

    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=clients)) as session:
        await asyncio.gather(*(client(i, session) for i in range(clients)))
    return {"statuses": dict(sorted(statuses.items())), "sizes": {name: len(body) for name, body in bodies}}


if __name__ == "__main__":
    host, port, path, clients, seconds = sys.argv[1:6]
    scale = float(sys.argv[6]) if len(sys.argv) > 6 else 1.0
    print(json.dumps(asyncio.run(attack(f"https://{host}:{port}{path}", int(clients), float(seconds), scale))))
