"""`ClientSettings` from a kubernetes_asyncio `Configuration` already loaded: for callers that hold one.

The program loads its settings with loading.py's `load_settings` (credentials that refresh); this adapter
serves the tests and benchmarks, which act on localcluster through kubernetes_asyncio and hand the
controller's client the same `Configuration`. The credentials read the configuration's BearerToken as
kubernetes_asyncio's own requests do, running its refresh hook at most once a second; TLS is what
kubernetes_asyncio's REST client makes of the configuration (its rest.py), made once. Nothing that `run`
imports uses it (tests/program/test_layers.py).
"""

from __future__ import annotations

import asyncio
import ssl
import time

from kubeclient.lean_kubernetes_asyncio import Configuration
from kubeclient.settings import ClientSettings

REFRESH_EVERY = 1.0  # seconds between runs of the configuration's refresh hook


class ConfigurationCredentials:
    """The `Credentials` of a kubernetes_asyncio Configuration: its BearerToken, kept fresh by its hook."""

    def __init__(self, configuration: Configuration) -> None:
        self.configuration = configuration
        self._context: ssl.SSLContext | None = None
        self._header: str | None = None
        self._checked = float("-inf")

    async def authorization(self) -> str | None:
        now = time.monotonic()
        if now - self._checked >= REFRESH_EVERY:
            self._checked = now
            await self._refresh()
        return self._header

    def ssl_context(self) -> ssl.SSLContext:
        if self._context is None:
            self._context = ssl_context(self.configuration)
        return self._context

    async def unauthorized(self) -> bool:
        before = self._header
        await self._refresh()
        self._checked = time.monotonic()
        return self._header != before

    async def close(self) -> None:
        pass

    async def _refresh(self) -> None:
        configuration = self.configuration
        hook = configuration.refresh_api_key_hook
        if hook is not None:
            result = hook(configuration)
            if asyncio.iscoroutine(result):
                await result
        key = configuration.api_key.get("BearerToken")
        prefix = configuration.api_key_prefix.get("BearerToken")
        self._header = f"{prefix} {key}" if key and prefix else key or None


def ssl_context(configuration: Configuration) -> ssl.SSLContext:
    """The TLS settings kubernetes_asyncio's REST client makes of a configuration (its rest.py): the CA, a
    client certificate, verification off only when asked for."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if configuration.disable_strict_ssl_verification:
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context


def settings_from_configuration(configuration: Configuration, source: str = "") -> ClientSettings:
    return ClientSettings(server=configuration.host, credentials=ConfigurationCredentials(configuration),
                          tls_server_name=configuration.tls_server_name, proxy_url=configuration.proxy or None,
                          source=source)


__all__ = ["ConfigurationCredentials", "settings_from_configuration", "ssl_context"]
