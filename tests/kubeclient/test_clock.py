"""The credentials' clock (kubeclient/clock.py): the real time unless a test gives its own."""

from __future__ import annotations

import time

from kubeclient.clock import SYSTEM_CLOCK, Clock
from kubeclient.loading import load_settings
from kubeclient.tls_material import TlsMaterial
from kubeclient.token_sources import OidcToken, TokenFile

from .clock import FakeClock
from .plugins import base_kubeconfig, write


def test_the_system_clock_reads_the_time_modules_clocks():
    before = time.time(), time.monotonic()
    read = SYSTEM_CLOCK.time(), SYSTEM_CLOCK.monotonic()
    after = time.time(), time.monotonic()
    assert before[0] <= read[0] <= after[0] and before[1] <= read[1] <= after[1]


def test_the_credentials_go_by_the_system_clock_unless_given_another(tmp_path):
    fake: Clock = FakeClock()
    oidc = {"idp-issuer-url": "https://issuer", "client-id": "c", "refresh-token": "r"}
    for default, given in ((TokenFile(str(tmp_path)), TokenFile(str(tmp_path), clock=fake)),
                           (OidcToken(oidc), OidcToken(oidc, clock=fake)),
                           (TlsMaterial(), TlsMaterial(clock=fake))):
        assert (default.clock, given.clock) == (SYSTEM_CLOCK, fake)


async def test_loaded_credentials_go_by_the_clock_given(cluster, tmp_path):
    (tmp_path / "token").write_text(cluster.admin_token)
    kubeconfig = write(tmp_path, base_kubeconfig(cluster, {"tokenFile": "token"}))
    for clock in (None, FakeClock()):
        settings = await load_settings(str(kubeconfig), **({"clock": clock} if clock else {}))
        expected = clock or SYSTEM_CLOCK
        assert settings.credentials.source.clock is expected and settings.credentials.tls.clock is expected
