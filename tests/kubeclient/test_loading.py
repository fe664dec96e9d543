"""load_settings: where the configuration comes from (controller-runtime's order), $KUBECONFIG's files merged as
client-go merges them, the cluster's TLS settings, the users' credentials, and the errors' words."""

from __future__ import annotations

import base64
import ssl
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio.config.config_exception import ConfigException

from kubeclient import loading
from kubeclient.loading import load_settings

from .requests import Requests


def config(current: str | None, clusters: dict[str, dict], users: dict[str, dict] | None = None,
           contexts: dict[str, tuple[str, str]] | None = None) -> dict:
    users = users if users is not None else {"u": {"token": "t"}}
    contexts = contexts or {name: (name, next(iter(users))) for name in clusters}
    doc = {"apiVersion": "v1", "kind": "Config",
           "clusters": [{"name": n, "cluster": c} for n, c in clusters.items()],
           "users": [{"name": n, "user": u} for n, u in users.items()],
           "contexts": [{"name": n, "context": {"cluster": c, "user": u}} for n, (c, u) in contexts.items()]}
    if current:
        doc["current-context"] = current
    return doc


def write(path: Path, doc: dict | str) -> Path:
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return path


async def test_kubeconfig_files_merge_as_client_go_merges_them(tmp_path, monkeypatch):
    first = write(tmp_path / "first", config(None, {"a": {"server": "https://a.first"}}))
    second = write(tmp_path / "second", config("a", {"a": {"server": "https://a.second"},
                                                     "b": {"server": "https://b.second"}}))
    third = write(tmp_path / "third", config("c", {"c": {"server": "https://c.third"}}))
    monkeypatch.setenv("KUBECONFIG", f"{first}:{tmp_path / 'missing'}:{second}:{third}")
    settings = await load_settings(None)
    # The first file to name a cluster wins; the first current-context set (the second file's) wins.
    assert settings.server == "https://a.first"
    assert settings.source.endswith("(context a)")
    assert (await load_settings(None, context="b")).server == "https://b.second"
    # --kubeconfig comes before $KUBECONFIG.
    assert (await load_settings(str(third))).server == "https://c.third"


async def test_in_cluster_comes_after_kubeconfig_and_before_the_default_location(cluster, tmp_path, monkeypatch):
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text(cluster.add_token("pod.token", "system:serviceaccount:ns:sa"))
    (account / "ca.crt").write_bytes(cluster.certificate)
    monkeypatch.setattr(loading, "SERVICE_ACCOUNT_DIR", str(account))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(cluster.port))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    write((tmp_path / ".kube").mkdir() or tmp_path / ".kube" / "config", config("a", {"a": {"server": "https://h"}}))
    settings = await load_settings(None)
    assert settings.source == "in-cluster"
    assert await Requests(settings).whoami() == (201, "system:serviceaccount:ns:sa")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    assert (await load_settings(None)).server == "https://h"


@pytest.mark.parametrize("source", ["--kubeconfig", "$KUBECONFIG", "the default location"])
async def test_a_missing_kubeconfig_says_where_it_looked(tmp_path, monkeypatch, source):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    missing = tmp_path / ".kube" / "config" if source == "the default location" else tmp_path / "nowhere"
    monkeypatch.delenv("KUBECONFIG", raising=False)
    if source == "$KUBECONFIG":
        monkeypatch.setenv("KUBECONFIG", str(missing))
    with pytest.raises(ConfigException) as raised:
        await load_settings(str(missing) if source == "--kubeconfig" else None)
    hint = " (not in a cluster either: pass --kubeconfig or set KUBECONFIG)" if source == "the default location" else ""
    assert str(raised.value) == f"kubeconfig {missing} (from {source}) does not exist{hint}"


@pytest.mark.parametrize(("text", "words"), [
    ("clusters: [\n  - name: a\n   server: x", "is not valid YAML"),
    ("", "is empty or not a kubeconfig"),
    ("- a list", "is empty or not a kubeconfig"),
    (yaml.safe_dump(config(None, {"a": {"server": "https://a"}})), ": no current-context (and no --context)"),
    (yaml.safe_dump(config("zz", {"a": {"server": "https://a"}})), "Expected object with name zz in"),
    (yaml.safe_dump(config("a", {"a": {}})), ": the cluster a has no server"),
    (yaml.safe_dump(config("a", {"a": {"server": "https://a"}}, {"u": {"token": "t", "username": "x"}})),
     ": the user has a username/password and a token: client-go takes only one"),
    (yaml.safe_dump(config("a", {"a": {"server": "https://a"}}, {"u": {"auth-provider": {"name": "gcp"}}})),
     ": the gcp auth plugin has been removed; use the gke-gcloud-auth-plugin exec plugin instead"),
    (yaml.safe_dump(config("a", {"a": {"server": "https://a"}}, {"u": {"auth-provider": {"name": "x"}}})),
     ": auth-provider x is not supported"),
    (yaml.safe_dump(config("a", {"a": {"server": "https://a"}}, {"u": {"exec": {"command": "p"}}})),
     ": exec plugin: apiVersion (none) is not supported"),
    (yaml.safe_dump(config("a", {"a": {"server": "https://a", "certificate-authority-data": "%%%"}})),
     ": certificate-authority-data is not base64"),
    (yaml.safe_dump(config("a", {"a": {"server": "https://a", "certificate-authority-data": "Y2E=",
                                       "insecure-skip-tls-verify": True}})),
     ": specifying a root certificates file with the insecure flag is not allowed"),
])
async def test_errors_name_the_file(tmp_path, text, words):
    path = write(tmp_path / "kubeconfig", text)
    with pytest.raises(ConfigException) as raised:
        await load_settings(str(path))
    assert str(raised.value).startswith(f"kubeconfig {path}")
    assert words in str(raised.value)


async def test_cluster_tls_settings_and_basic_auth(tmp_path):
    settings = await load_settings(str(write(tmp_path / "kubeconfig", config("a", {"a": {
        "server": "https://a:6443/prefix", "insecure-skip-tls-verify": True, "tls-server-name": "api.internal",
        "proxy-url": "http://proxy:3128"}}, {"u": {"username": "ann", "password": "secret"}}))))
    assert (settings.server, settings.tls_server_name, settings.proxy_url) == \
        ("https://a:6443/prefix", "api.internal", "http://proxy:3128")
    assert await settings.credentials.authorization() == "Basic " + base64.b64encode(b"ann:secret").decode()
    assert settings.credentials.ssl_context().verify_mode == ssl.CERT_NONE
    assert await settings.credentials.unauthorized() is False  # nothing to renew: the 401 stands


async def test_a_user_without_credentials_sends_none(cluster, tmp_path):
    doc = config("a", {"a": {"server": cluster.url, "certificate-authority-data":
                             base64.b64encode(cluster.certificate).decode()}}, {"u": {}})
    settings = await load_settings(str(write(tmp_path / "kubeconfig", doc)))
    assert await settings.credentials.authorization() is None
    assert settings.credentials.ssl_context().verify_mode == ssl.CERT_REQUIRED
    assert (await Requests(settings).whoami())[0] == 403  # system:anonymous
