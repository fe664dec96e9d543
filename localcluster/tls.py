"""A self-signed serving certificate for `LocalCluster(tls=True)`, made with the openssl command.

kubectl sends bearer tokens only over TLS (client-go drops credentials for plain-HTTP servers),
so a test that runs kubectl as a user other than the insecure port's needs HTTPS.
"""

from __future__ import annotations

import ssl
import subprocess
import tempfile
from pathlib import Path


def self_signed(host: str) -> tuple[ssl.SSLContext, bytes]:
    """A server SSL context and its certificate (PEM), valid for `host`, localhost and 127.0.0.1."""
    with tempfile.TemporaryDirectory(prefix="localcluster-tls-") as tmp:
        key, cert = Path(tmp) / "tls.key", Path(tmp) / "tls.crt"
        names = {"IP:127.0.0.1", "DNS:localhost", f"IP:{host}" if host.replace(".", "").isdigit() else f"DNS:{host}"}
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "30", "-subj", "/CN=localcluster",
                        "-addext", "subjectAltName=" + ",".join(sorted(names)),
                        "-addext", "basicConstraints=critical,CA:TRUE"],
                       check=True, capture_output=True, timeout=30)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        return context, cert.read_bytes()
