"""A stopped cluster is freed once nothing of its user holds it: a process that runs cluster after cluster (a test
suite runs hundreds, each in its test's event loop) must not keep each one's store and objects to its end."""

from __future__ import annotations

import asyncio
import gc
import weakref

from localcluster import LocalCluster


async def _serve_a_little() -> weakref.ref:
    async with LocalCluster() as cluster:
        configmaps = cluster.registry.get("", "v1", "configmaps")
        cluster.api.create(configmaps, "default", {"metadata": {"name": "settings"}, "data": {"lr": "0.1"}})
        async with cluster.session() as session:
            for path in ("/api/v1/namespaces/default/configmaps", "/version", "/apis", "/api/v1/nodes/missing"):
                async with session.get(cluster.url + path) as answer:
                    await answer.read()
    return weakref.ref(cluster)


def test_a_stopped_cluster_that_served_requests_is_freed_with_its_event_loop():
    freed = asyncio.run(_serve_a_little())  # as a test's own loop, closed at its end
    gc.collect()
    assert freed() is None, [type(r).__name__ for r in gc.get_referrers(freed())]
