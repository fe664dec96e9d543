"""Token files (kubeconfig `tokenFile`, the in-cluster projected token) rotated on disk while the old token is
revoked on the server: picked up at the 401, or when the minute client-go caches a file's token for is over (a
minute of the test's clock, tests/kubeclient/clock.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes_asyncio.config.config_exception import ConfigException

from kubeclient.credentials import RefreshingCredentials
from kubeclient.loading import in_cluster_settings, load_settings
from kubeclient.settings import ClientSettings
from kubeclient.tls_material import Pem, TlsMaterial
from kubeclient.token_sources import TOKEN_FILE_PERIOD, TokenFile

from .plugins import base_kubeconfig, write
from .requests import Requests


def token_kubeconfig(cluster, directory: Path) -> Path:
    (directory / "token").write_text(cluster.add_token("first.token", "first") + "\n")
    (directory / "ca.crt").write_bytes(cluster.certificate)
    return write(directory, base_kubeconfig(cluster, {"tokenFile": "token"}, ca_file=directory / "ca.crt"))


async def test_a_rotated_token_file_is_read_again_at_the_401(cluster, clock, tmp_path):
    requests = Requests(await load_settings(str(token_kubeconfig(cluster, tmp_path)), clock=clock))
    assert await requests.whoami() == (201, "first")
    (tmp_path / "token").write_text(cluster.add_token("second.token", "second"))
    # Within the minute the file's token is cached for, the old one is sent while it works...
    assert await requests.whoami() == (201, "first")
    cluster.revoke_token("first.token")
    # ... and when it stops working, the file is read again at once and the request sent once more.
    assert await requests.whoami() == (201, "second")
    assert (requests.unauthorized, requests.retried) == (1, 1)
    # A 401 with the file unchanged stands.
    cluster.revoke_token("second.token")
    assert (await requests.whoami())[0] == 401
    assert (requests.unauthorized, requests.retried) == (2, 1)


async def test_a_token_file_is_read_again_when_its_period_is_over(cluster, clock, tmp_path):
    (tmp_path / "token").write_text(cluster.add_token("first.token", "first"))
    tls = TlsMaterial(ca=Pem(data=cluster.certificate), clock=clock)
    source = TokenFile(str(tmp_path / "token"), clock=clock)
    requests = Requests(ClientSettings(cluster.url, RefreshingCredentials(source, tls)))
    assert source.period == TOKEN_FILE_PERIOD == 60.0  # client-go's
    assert await requests.whoami() == (201, "first")
    (tmp_path / "token").write_text(cluster.add_token("second.token", "second"))
    clock.advance(59.5)
    assert await requests.whoami() == (201, "first")  # within the minute: the token read is kept
    clock.advance(0.5)
    assert await requests.whoami() == (201, "second")  # the minute is over: read again
    assert requests.unauthorized == 0  # the old token still worked: no 401 needed
    # A file that cannot be read keeps the last token.
    (tmp_path / "token").unlink()
    clock.advance(60.0)
    assert await requests.whoami() == (201, "second")


async def test_in_cluster_the_projected_token_is_read_again_after_rotation(cluster, clock, tmp_path):
    (tmp_path / "token").write_text(cluster.add_token("pod.token.1", "system:serviceaccount:ns:sa"))
    (tmp_path / "ca.crt").write_bytes(cluster.certificate)
    settings = await in_cluster_settings(str(tmp_path), {"KUBERNETES_SERVICE_HOST": "127.0.0.1",
                                                         "KUBERNETES_SERVICE_PORT": str(cluster.port)}, clock)
    assert settings.server == cluster.url and settings.source == "in-cluster"
    requests = Requests(settings)
    assert await requests.whoami() == (201, "system:serviceaccount:ns:sa")
    # The kubelet writes the new token (through a symlink swap); the old one expires.
    (tmp_path / "token.new").write_text(cluster.add_token("pod.token.2", "system:serviceaccount:ns:sa"))
    (tmp_path / "token.new").rename(tmp_path / "token")
    cluster.revoke_token("pod.token.1")
    assert await requests.whoami() == (201, "system:serviceaccount:ns:sa")
    assert (requests.unauthorized, requests.retried) == (1, 1)


async def test_in_cluster_errors(tmp_path):
    with pytest.raises(ConfigException, match="KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined"):
        await in_cluster_settings(str(tmp_path), {})
    with pytest.raises(ConfigException, match=f"in-cluster: token file {tmp_path}/token: No such file"):
        await in_cluster_settings(str(tmp_path), {"KUBERNETES_SERVICE_HOST": "fd00::1",
                                                  "KUBERNETES_SERVICE_PORT": "443"})


async def test_a_missing_token_file_is_a_load_error(cluster, tmp_path):
    kubeconfig = token_kubeconfig(cluster, tmp_path)
    (tmp_path / "token").unlink()
    with pytest.raises(ConfigException, match=f"kubeconfig {kubeconfig} .*: token file {tmp_path}/token: No such file"):
        await load_settings(str(kubeconfig))
