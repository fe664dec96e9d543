"""One informer per (resource, namespace, label selector), however many controllers ask for it."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry

from apimachinery.resource import Resource
from informers.informer import Informer, InformerStatus, Transform
from informers.lister import Lister
from informers.metrics import InformerCollector
from informers.options import InformerOptions
from kubeclient.rest import RestClient


class SyncTimeoutError(TimeoutError):
    """Some informers did not sync in time; `resources` names them."""

    def __init__(self, timeout: float, informers: list[Informer]) -> None:
        self.resources = [str(informer) for informer in informers]
        details = "; ".join(
            f"{informer} (last error: {informer.stats.last_error})" if informer.stats.last_error else str(informer)
            for informer in informers)
        super().__init__(f"informers not synced after {timeout:g} s: {details}")


class InformerFactory:
    def __init__(self, client: RestClient, *, options: InformerOptions | None = None,
                 registry: CollectorRegistry | None = None) -> None:
        """`registry`, if given, gets Prometheus metrics for every informer of this factory."""
        self.client = client
        self.options = options or InformerOptions()
        self._informers: dict[tuple[Resource, str | None, str | None], Informer] = {}
        if registry is not None:
            registry.register(InformerCollector(self._informers.values))

    def informer(self, resource: Resource, namespace: str | None = None, label_selector: str | None = None,
                 transform: Transform | None = None, options: InformerOptions | None = None) -> Informer:
        """The shared informer for this resource, namespace and selector, created on first request.

        `transform` and `options` (the factory's by default) are fixed by the call that creates it;
        a later call asking for different ones is an error. An informer asked for after `start()`
        is started by the next `start()` call, as in client-go.
        """
        key = (resource, namespace or None, label_selector or None)
        informer = self._informers.get(key)
        if informer is None:
            informer = Informer(self.client, resource, namespace=namespace, label_selector=label_selector,
                                transform=transform, options=options or self.options)
            self._informers[key] = informer
        elif transform is not None and informer.transform is not transform:
            raise ValueError(f"the informer for {informer} already exists with another transform")
        elif options is not None and informer.options != options:
            raise ValueError(f"the informer for {informer} already exists with other options")
        return informer

    def lister(self, resource: Resource, namespace: str | None = None, label_selector: str | None = None) -> Lister:
        return self.informer(resource, namespace, label_selector).lister

    @property
    def informers(self) -> list[Informer]:
        return list(self._informers.values())

    def start(self) -> None:
        for informer in self._informers.values():
            informer.start()

    async def wait_for_sync(self, timeout: float) -> None:
        """Wait until every informer has synced; `SyncTimeoutError` names those that did not."""
        pending = [informer for informer in self._informers.values() if not informer.has_synced]
        if not pending:
            return
        waits = [asyncio.ensure_future(informer.wait_for_sync()) for informer in pending]
        try:
            await asyncio.wait(waits, timeout=timeout)
        finally:
            for wait in waits:
                wait.cancel()
        late = [informer for informer in pending if not informer.has_synced]
        if late:
            raise SyncTimeoutError(timeout, late)

    async def stop(self) -> None:
        await asyncio.gather(*(informer.stop() for informer in self._informers.values()))

    def healthy(self) -> bool:
        return all(informer.healthy() for informer in self._informers.values())

    def status(self) -> list[InformerStatus]:
        return [informer.status() for informer in self._informers.values()]
