"""Proxies as client-go decides them (kubeclient/proxy.py): NO_PROXY's rules as a table, and a scripted proxy
(a tiny asyncio server that counts CONNECTs and relays to localcluster) for what the client really does."""

from __future__ import annotations

import asyncio
import contextlib
import ssl

import pytest

from kubeclient.proxy import proxy_for
from kubeclient.rest import RestClient
from kubeclient.settings import ClientSettings
from localcluster.testing import trusting

PROXY = "http://proxy.corp:3128"
SERVER = "https://10.96.0.1:443"


@pytest.mark.parametrize(("server", "no_proxy", "proxied"), [
    (SERVER, "", True),
    (SERVER, "10.0.0.0/8", False),  # a CIDR holds the address
    (SERVER, "11.0.0.0/8", True),
    (SERVER, "10.96.0.0/12,example.com", False),
    (SERVER, "10.96.0.1", False),  # the address itself
    (SERVER, "10.96.0.1:443", False),  # with its port
    (SERVER, "10.96.0.1:6443", True),  # another port
    (SERVER, "*", False),
    (SERVER, " , 10.96.0.2 ,", True),
    ("https://api.example.com", "example.com", False),  # a host and its subdomains
    ("https://example.com", "example.com", False),
    ("https://example.com", ".example.com", True),  # subdomains only
    ("https://api.example.com", ".example.com", False),
    ("https://api.example.com", "*.example.com", False),
    ("https://notexample.com", "example.com", True),  # a suffix is not a subdomain
    ("https://API.Example.COM", "example.com", False),  # case does not matter
    ("https://api.example.com:6443", "example.com:6443", False),
    ("https://api.example.com:6443", "example.com:443", True),
    ("https://api.example.com", "example.com:443", False),  # the scheme's port
    ("https://[fd00::1]:443", "fd00::/8", False),
    ("https://[fd00::1]:443", "[fd00::1]:443", False),
    ("https://[fd00::1]:443", "fd01::/16", True),
])
def test_no_proxy_rules(server, no_proxy, proxied):
    assert proxy_for(server, environ={"HTTPS_PROXY": PROXY, "NO_PROXY": no_proxy}) == (PROXY if proxied else None)


# Issue 47: every spelling of loopback the resolver reads (inet_aton's IPv4 forms, IPv4-mapped IPv6, a zone, a
# trailing dot, upper case) goes direct; the look-alikes that are not loopback are proxied.
LOOPBACK_SPELLINGS = ["https://127.1", "https://0x7f.1", "https://2130706433:6443", "https://017700000001",
                      "https://0x7f000001", "https://127.0.1", "https://[::ffff:127.0.0.1]:6443",
                      "https://[::ffff:7f00:1]", "https://[0:0:0:0:0:0:0:1]", "https://LOCALHOST", "https://localhost.",
                      "https://[::1%25lo]:6443"]
NOT_LOOPBACK = ["https://128.1", "https://0x80.1", "https://167772161", "https://[::ffff:10.0.0.1]",
                "https://localhost.example.com", "https://127.0.0.1.nip.io", "https://[::2]", "https://0x7g.1"]


@pytest.mark.parametrize("server", ["https://localhost:6443", "https://127.0.0.1:6443", "https://127.8.9.10",
                                    "https://[::1]:6443", "http://localhost:8080", *LOOPBACK_SPELLINGS])
def test_loopback_is_never_proxied_by_the_environment(server):
    everything = {"HTTPS_PROXY": PROXY, "HTTP_PROXY": PROXY}
    assert proxy_for(server, environ=everything) is None
    assert proxy_for(server, "http://chosen:8080", environ=everything) == "http://chosen:8080"  # kubeconfig's wins


@pytest.mark.parametrize("server", NOT_LOOPBACK)
def test_addresses_that_only_look_like_loopback_are_proxied(server):
    assert proxy_for(server, environ={"HTTPS_PROXY": PROXY}) == PROXY


def test_the_scheme_chooses_the_variable_upper_case_first():
    env = {"https_proxy": "http://lower:1", "HTTPS_PROXY": "http://upper:1", "http_proxy": "plain:2"}
    assert proxy_for(SERVER, environ=env) == "http://upper:1"
    assert proxy_for(SERVER, environ={"https_proxy": "http://lower:1"}) == "http://lower:1"
    assert proxy_for("http://10.96.0.1:80", environ=env) == "http://plain:2"  # host:port gets http://
    assert proxy_for(SERVER, environ={"HTTP_PROXY": PROXY}) is None  # an https server ignores HTTP_PROXY
    assert proxy_for(SERVER, environ={"HTTPS_PROXY": PROXY, "no_proxy": "10.96.0.1"}) is None
    assert proxy_for(SERVER, environ={}) is None


def test_kubeconfigs_proxy_url_wins_over_no_proxy():
    assert proxy_for(SERVER, "http://chosen:8080", environ={"HTTPS_PROXY": PROXY, "NO_PROXY": "*"}) == \
        "http://chosen:8080"


class ScriptedProxy:
    """An HTTP CONNECT proxy that relays every tunnel to `target` (whatever host was asked for), counting them."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.connects: list[str] = []
        self.authorizations: list[str | None] = []
        self.server: asyncio.Server | None = None
        self._relays: set[asyncio.Task] = set()

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc) -> None:
        self.server.close()
        for relay in self._relays:
            relay.cancel()
        await asyncio.gather(*self._relays, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        method, where, _ = head.split("\r\n")[0].split(" ")
        if method != "CONNECT":
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            writer.close()
            return
        self.connects.append(where)
        self.authorizations.append(next((line.split(": ", 1)[1] for line in head.split("\r\n")
                                         if line.lower().startswith("proxy-authorization:")), None))
        upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        for source, sink in ((reader, upstream_writer), (upstream_reader, writer)):
            task = asyncio.ensure_future(self._pipe(source, sink))
            self._relays.add(task)
            task.add_done_callback(self._relays.discard)

    @staticmethod
    async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        sink.close()


class Token:
    """Credentials: a fixed token, the cluster's CA."""

    def __init__(self, token: str, certificate: bytes | None) -> None:
        self.token = token
        self.context = trusting(certificate) if certificate else ssl.create_default_context()

    async def authorization(self) -> str:
        return f"Bearer {self.token}"

    def ssl_context(self):
        return self.context

    async def unauthorized(self) -> bool:
        return False

    async def close(self) -> None:
        pass


def clear_proxy_env(monkeypatch) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
       "spec": {"containers": [{"name": "c", "image": "x"}]}}


async def test_lists_watches_and_writes_go_through_the_environments_proxy(cluster, monkeypatch):
    clear_proxy_env(monkeypatch)
    proxy = ScriptedProxy((cluster.host, cluster.port))
    async with proxy as url:
        monkeypatch.setenv("HTTPS_PROXY", url)
        monkeypatch.setenv("NO_PROXY", "10.0.0.0/8,.svc")
        # A name only the proxy knows: the request can only have gone through it.
        settings = ClientSettings(f"https://kubernetes.proxied.test:{cluster.port}",
                                  Token(cluster.admin_token, cluster.certificate), tls_server_name=cluster.host)
        async with RestClient(settings) as rest:
            assert rest.proxy == url and rest.write_pool is None
            made = await rest.call("POST", "/api/v1/namespaces/default/pods", POD)
            assert made["metadata"]["name"] == "p"
            assert b'"p"' in await rest.get("/api/v1/namespaces/default/pods")
            watch = await rest.stream("/api/v1/namespaces/default/pods", {"watch": "true", "timeoutSeconds": "1"})
            assert b"ADDED" in await watch.content.readline()
            watch.close()
    assert proxy.connects and set(proxy.connects) == {f"kubernetes.proxied.test:{cluster.port}"}


async def test_loopback_goes_direct_whatever_the_environment_says(cluster, monkeypatch):
    clear_proxy_env(monkeypatch)
    proxy = ScriptedProxy((cluster.host, cluster.port))
    async with proxy as url:
        monkeypatch.setenv("HTTPS_PROXY", url)
        async with RestClient(ClientSettings(cluster.url, Token(cluster.admin_token, cluster.certificate))) as rest:
            assert rest.proxy is None
            await rest.call("POST", "/api/v1/namespaces/default/pods", POD)
            await rest.get("/api/v1/namespaces/default/pods")
            assert rest.write_pool.open_connections == 1
    assert proxy.connects == []


async def test_kubeconfigs_proxy_url_is_used_even_for_loopback_with_its_credentials(cluster, monkeypatch):
    clear_proxy_env(monkeypatch)
    proxy = ScriptedProxy((cluster.host, cluster.port))
    async with proxy as url:
        chosen = url.replace("http://", "http://me:s%40cret@")
        settings = ClientSettings(cluster.url, Token(cluster.admin_token, cluster.certificate), proxy_url=chosen)
        async with RestClient(settings) as rest:
            await rest.call("POST", "/api/v1/namespaces/default/pods", POD)
    assert proxy.connects == [f"{cluster.host}:{cluster.port}"]
    assert proxy.authorizations == ["Basic bWU6c0BjcmV0"]  # me:s@cret


def test_the_environment_is_read_once_when_the_client_is_made(monkeypatch):
    clear_proxy_env(monkeypatch)
    monkeypatch.setenv("HTTPS_PROXY", PROXY)
    rest = RestClient(ClientSettings(SERVER, Token("t", None)))
    monkeypatch.setenv("HTTPS_PROXY", "http://other:1")
    monkeypatch.setenv("NO_PROXY", "*")
    assert rest.proxy == PROXY
