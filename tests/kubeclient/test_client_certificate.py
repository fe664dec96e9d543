"""Client certificates in files (kubeconfig client-certificate/client-key, relative to the kubeconfig), rotated on
disk: picked up when the old one expires (its 401 reloads them at once) or at the next stat check; the SSLContext
is the same object until the files change, and a half-written pair keeps the previous one. The time is the test's
clock (tests/kubeclient/clock.py): the client's checks, and localcluster's judgement of a certificate's expiry."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cryptography import x509
from kubernetes_asyncio.config.config_exception import ConfigException

from kubeclient import tls_material
from kubeclient.loading import load_settings
from localcluster.testing import ClientCa

from .clock import FakeClock, drive_cluster
from .plugins import base_kubeconfig, write
from .requests import Requests


def certificate_files(cluster, directory: Path, user: str, lifetime: float = 3600.0) -> None:
    cert, key = cluster.client_certificate(user, ["team"], lifetime)
    (directory / "user.crt").write_bytes(cert)
    (directory / "user.key").write_bytes(key)


async def certificate_settings(cluster, directory: Path, user: str, lifetime: float = 3600.0,
                               clock: FakeClock | None = None):
    certificate_files(cluster, directory, user, lifetime)
    return await settings_of_the_files(cluster, directory, clock or FakeClock())


async def settings_of_the_files(cluster, directory: Path, clock: FakeClock):
    (directory / "ca.crt").write_bytes(cluster.certificate)
    user_entry = {"client-certificate": "user.crt", "client-key": "user.key"}
    return await load_settings(str(write(directory, base_kubeconfig(cluster, user_entry, directory / "ca.crt"))),
                               clock=clock)


async def test_an_expired_certificate_is_replaced_by_the_rotated_files_at_its_401(cluster, tmp_path, monkeypatch):
    certificate_files(cluster, tmp_path, "alice", lifetime=2.0)
    # localcluster issues certificates by the real time, to the second, valid from a second before: the clock
    # starts at the second of the issue, and the cluster goes by it.
    certificate = x509.load_pem_x509_certificate((tmp_path / "user.crt").read_bytes())
    clock = FakeClock(start=certificate.not_valid_before_utc.timestamp() + 1.0)
    drive_cluster(cluster, clock, monkeypatch)
    loaded = clock.monotonic()
    settings = await settings_of_the_files(cluster, tmp_path, clock)
    requests = Requests(settings)
    assert await requests.whoami() == (201, "alice")
    certificate_files(cluster, tmp_path, "alice-renewed")
    assert await requests.whoami() == (201, "alice")  # not checked again before CHECK_INTERVAL: the old one works
    clock.advance_to(certificate.not_valid_after_utc.timestamp() + 1.0)  # the old one has expired...
    assert clock.monotonic() - loaded < tls_material.CHECK_INTERVAL  # ... and the files were not checked since
    # Concurrent requests, all made with the old certificate: the first 401 reloads the files, and every
    # request is sent again with the new one (also those whose 401 came after the reload).
    results = await asyncio.gather(*(requests.whoami() for _ in range(5)))
    assert results == [(201, "alice-renewed")] * 5
    assert (requests.unauthorized, requests.retried) == (5, 5)


async def test_rotated_files_are_picked_up_at_the_next_check(cluster, clock, tmp_path):
    settings = await certificate_settings(cluster, tmp_path, "alice", clock=clock)
    requests = Requests(settings)
    assert await requests.whoami() == (201, "alice")
    first = settings.credentials.ssl_context()
    clock.advance(tls_material.CHECK_INTERVAL)  # past a check: nothing changed, the same context
    assert settings.credentials.ssl_context() is first
    certificate_files(cluster, tmp_path, "bob")
    clock.advance(tls_material.CHECK_INTERVAL - 0.5)
    assert await requests.whoami() == (201, "alice")  # not checked again before the interval is over
    clock.advance(0.5)
    assert await requests.whoami() == (201, "bob")  # checked: the rotated certificate
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
