"""The self-signed serving certificate of a LocalCluster, made with the openssl command.

Every LocalCluster serves HTTPS (unless a benchmark asks for `tls=False`): kubectl sends bearer
tokens only over TLS, and there is no way in without one. One key and certificate per process and
host, made at the first cluster's start and reused by the next ones: running openssl for each of
the test suite's clusters would cost a second every twenty tests. `local` and `serve` run one
cluster per process, so theirs is that instance's own. The server asks for a client certificate of the
process's client CA (client_certificates.py) without requiring one.
"""

from __future__ import annotations

import functools
import ssl
import tempfile
from pathlib import Path

from .client_certificates import client_ca, request_client_certificates
from .host_commands import openssl


@functools.lru_cache(maxsize=8)
def self_signed(host: str) -> tuple[ssl.SSLContext, bytes]:
    """A server SSL context and its certificate (PEM), valid for `host`, localhost and 127.0.0.1."""
    with tempfile.TemporaryDirectory(prefix="localcluster-tls-") as tmp:
        key, cert = Path(tmp) / "tls.key", Path(tmp) / "tls.crt"
        names = {"IP:127.0.0.1", "DNS:localhost", f"IP:{host}" if host.replace(".", "").isdigit() else f"DNS:{host}"}
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", str(key), "-out", str(cert), "-days", "30", "-subj", "/CN=localcluster",
                "-addext", "subjectAltName=" + ",".join(sorted(names)), "-addext", "basicConstraints=critical,CA:TRUE",
                timeout=30)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        # Client certificates of this process's client CA authenticate too, as the apiserver's --client-ca-file.
        request_client_certificates(context, client_ca())
        return context, cert.read_bytes()


@functools.lru_cache(maxsize=8)
def trusting(certificate: bytes) -> ssl.SSLContext:
    """A client SSL context that trusts only `certificate` (the cluster's CA, as its kubeconfig's)."""
    return ssl.create_default_context(cadata=certificate.decode())
