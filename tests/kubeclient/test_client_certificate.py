"""Client certificates in files (kubeconfig client-certificate/client-key, relative to the kubeconfig), rotated on
disk: picked up when the old one expires (its 401 reloads them at once) or at the next stat check; the SSLContext
is the same object until the files change, and a half-written pair keeps the previous one."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from kubernetes_asyncio.config.config_exception import ConfigException

from kubeclient import tls_material
from kubeclient.loading import load_settings
from localcluster.auth.client_certificates import ClientCa

from .plugins import base_kubeconfig, write
from .requests import Requests


def certificate_files(cluster, directory: Path, user: str, lifetime: float = 3600.0) -> None:
    cert, key = cluster.client_certificate(user, ["team"], lifetime)
    (directory / "user.crt").write_bytes(cert)
    (directory / "user.key").write_bytes(key)


async def certificate_settings(cluster, directory: Path, user: str, lifetime: float = 3600.0):
    certificate_files(cluster, directory, user, lifetime)
    (directory / "ca.crt").write_bytes(cluster.certificate)
    user_entry = {"client-certificate": "user.crt", "client-key": "user.key"}
    return await load_settings(str(write(directory, base_kubeconfig(cluster, user_entry, directory / "ca.crt"))))


async def test_an_expired_certificate_is_replaced_by_the_rotated_files_at_its_401(cluster, tmp_path):
    issued = time.time()
    settings = await certificate_settings(cluster, tmp_path, "alice", lifetime=2.0)
    requests = Requests(settings)
    assert await requests.whoami() == (201, "alice")
    certificate_files(cluster, tmp_path, "alice-renewed")
    assert await requests.whoami() == (201, "alice")  # not checked again before CHECK_INTERVAL: the old one works
    await asyncio.sleep(max(0.0, issued + 3.1 - time.time()))  # until the old certificate expired (1 s resolution)
    # Concurrent requests, all made with the old certificate: the first 401 reloads the files, and every
    # request is sent again with the new one (also those whose 401 came after the reload).
    results = await asyncio.gather(*(requests.whoami() for _ in range(5)))
    assert results == [(201, "alice-renewed")] * 5
    assert (requests.unauthorized, requests.retried) == (5, 5)


async def test_rotated_files_are_picked_up_at_the_next_check(cluster, tmp_path, monkeypatch):
    monkeypatch.setattr(tls_material, "CHECK_INTERVAL", 0.2)
    settings = await certificate_settings(cluster, tmp_path, "alice")
    requests = Requests(settings)
    assert await requests.whoami() == (201, "alice")
    first = settings.credentials.ssl_context()
    await asyncio.sleep(0.3)  # past a check: nothing changed, the same context
    assert settings.credentials.ssl_context() is first
    certificate_files(cluster, tmp_path, "bob")
    deadline = time.monotonic() + 5
    while (await requests.whoami())[1] != "bob":
        assert time.monotonic() < deadline, "the rotated certificate was not picked up"
        await asyncio.sleep(0.05)
    assert settings.credentials.ssl_context() is not first
    assert requests.unauthorized == 0


async def test_a_half_written_pair_keeps_the_previous_context(cluster, tmp_path, monkeypatch):
    monkeypatch.setattr(tls_material, "CHECK_INTERVAL", 0.0)  # a stat check on every call
    settings = await certificate_settings(cluster, tmp_path, "alice")
    first = settings.credentials.ssl_context()
    cert, key = cluster.client_certificate("bob", ["team"])
    (tmp_path / "user.crt").write_bytes(cert)  # the key of alice still there: no match
    assert settings.credentials.ssl_context() is first
    (tmp_path / "user.key").write_bytes(key)
    assert settings.credentials.ssl_context() is not first
    assert await Requests(settings).whoami() == (201, "bob")


async def test_a_missing_certificate_file_is_a_load_error(cluster, tmp_path):
    with pytest.raises(ConfigException, match=r"client-key .*user\.key does not exist"):
        certificate_files(cluster, tmp_path, "alice")
        (tmp_path / "user.key").unlink()
        (tmp_path / "ca.crt").write_bytes(cluster.certificate)
        user_entry = {"client-certificate": "user.crt", "client-key": "user.key"}
        await load_settings(str(write(tmp_path, base_kubeconfig(cluster, user_entry, tmp_path / "ca.crt"))))


async def test_a_changed_ca_file_makes_a_new_context(cluster, tmp_path, monkeypatch):
    monkeypatch.setattr(tls_material, "CHECK_INTERVAL", 0.0)
    settings = await certificate_settings(cluster, tmp_path, "alice")
    first = settings.credentials.ssl_context()
    assert settings.credentials.ssl_context() is first
    (tmp_path / "ca.crt").write_bytes(cluster.certificate + ClientCa("another").certificate_pem)  # a bundle of two
    second = settings.credentials.ssl_context()
    assert second is not first and len(second.get_ca_certs()) == 2
    assert await Requests(settings).whoami() == (201, "alice")
