"""The controller's client (kubeclient.rest.RestClient) for the settings of a test's kubernetes_asyncio client.

Tests act on the cluster through kubernetes_asyncio's generated API classes, as a user would; what they start of
the controller gets its own client, with the same server, token and CA: `async with controller_client(api) as rest`.
"""

from __future__ import annotations

from kubernetes_asyncio import client

from kubeclient.from_configuration import settings_from_configuration
from kubeclient.rest import RestClient


def controller_client(api: client.ApiClient, **kwargs) -> RestClient:
    return RestClient(settings_from_configuration(api.configuration), **kwargs)


__all__ = ["controller_client"]
