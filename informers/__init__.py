"""Shared informers over raw JSON: reflector (list + watch), indexed cache, handlers, listers.

    factory = InformerFactory(rest_client)           # kubeclient.rest.RestClient
    pods = factory.informer(PODS, namespace="default")
    pods.add_handler(on_add=..., on_update=..., on_delete=...)
    factory.start()
    await factory.wait_for_sync(timeout=30)
    pods.lister.controlled_by(job_uid)
    ...
    await factory.stop()

See the design notes (shared/design/CONTROLLER.md, "Informer") for the guarantees kept, and each module for how.
"""

from apimachinery.errors import ApiStatusError
from apimachinery.resource import PODS, SERVICES, Resource
from informers.backoff import Backoff, BackoffPolicy
from informers.factory import InformerFactory, SyncTimeoutError
from informers.handlers import HandlerRegistration, Tombstone
from informers.informer import Informer, InformerStatus
from informers.lister import CacheReader, Lister
from informers.options import InformerOptions
from informers.stats import InformerStats
from informers.store import CONTROLLER_INDEX, NAMESPACE_INDEX, Store, controller_index, namespace_index, object_key

__all__ = [
    "CONTROLLER_INDEX",
    "NAMESPACE_INDEX",
    "PODS",
    "SERVICES",
    "ApiStatusError",
    "Backoff",
    "BackoffPolicy",
    "CacheReader",
    "HandlerRegistration",
    "Informer",
    "InformerFactory",
    "InformerOptions",
    "InformerStats",
    "InformerStatus",
    "Lister",
    "Resource",
    "Store",
    "SyncTimeoutError",
    "Tombstone",
    "controller_index",
    "namespace_index",
    "object_key",
]
