"""The TLS side of the credentials: the CA to trust and the client certificate, reloaded when their files change.

client-go reloads a kubeconfig's client certificate files (its cert rotation) and a CA bundle in place; here
`TlsMaterial.context()` stats the files at most every CHECK_INTERVAL seconds (a few stat calls: cheap enough
for every new connection) and builds a new SSLContext only when one changed, else returns the same object,
which the transports compare by identity. A file caught half-written (a certificate that does not match its
key yet) keeps the previous context until the next check. Inline data (kubeconfig `*-data`, an exec
plugin's certificate) never changes on disk: a new plugin certificate comes in as a new `client_chain`.
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .clock import SYSTEM_CLOCK, Clock
from .kube_config_parts import ConfigException

log = logging.getLogger(__name__)

CHECK_INTERVAL = 5.0  # seconds between stat checks of the certificate files

Signature = tuple[int, int, int, int] | None  # a file's (device, inode, size, mtime_ns); None: inline or missing


@dataclass(frozen=True)
class Pem:
    """PEM bytes kept inline or in a file (read anew on each load)."""

    path: str | None = None
    data: bytes | None = None

    def read(self) -> bytes:
        if self.data is not None:
            return self.data
        assert self.path is not None
        with open(self.path, "rb") as f:
            return f.read()

    def signature(self) -> Signature:
        if self.path is None:
            return None
        try:
            st = os.stat(self.path)  # follows links: a Secret volume's ..data swap changes the inode
        except OSError:
            return None
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def describe(self) -> str:
        return self.path or "inline data"


def load_client_chain(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """ssl loads a certificate and key from files only: a private directory that lives for the call."""
    with tempfile.TemporaryDirectory(prefix="kubeclient-") as tmp:  # 0700: the key is readable by us alone
        cert_path, key_path = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        cert_path.write_bytes(cert)
        key_path.touch(0o600)
        key_path.write_bytes(key)
        context.load_cert_chain(cert_path, key_path)


class TlsMaterial:
    """The CA (or the system's, or none verified with insecure-skip-tls-verify) and a client certificate."""

    def __init__(self, ca: Pem | None = None, cert: Pem | None = None, key: Pem | None = None,
                 insecure: bool = False, check_interval: float | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        if (cert is None) != (key is None):
            raise ConfigException("a client certificate needs its key and a key its certificate")
        self.ca, self.cert, self.key, self.insecure = ca, cert, key, insecure
        self.check_interval = CHECK_INTERVAL if check_interval is None else check_interval
        self.clock = clock
        self._signatures = self._stat()
        self._chain: tuple[bytes, bytes] | None = None  # an exec plugin's certificate and key, when it gives one
        self._next_check = self.clock.monotonic() + self.check_interval
        try:
            self._context = self._build()
        except (OSError, ssl.SSLError, ValueError) as err:
            raise ConfigException(f"TLS settings: {err} ({self._files()})") from err

    def _files(self) -> str:
        named = [f"{what} {pem.describe()}" for what, pem in (("CA", self.ca), ("certificate", self.cert),
                                                              ("key", self.key)) if pem is not None]
        return ", ".join(named) or "system CAs"

    def _stat(self) -> tuple[Signature, ...]:
        return tuple(pem.signature() if pem is not None else None for pem in (self.ca, self.cert, self.key))

    def _build(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=self.ca.read().decode() if self.ca is not None else None)
        if self.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self._chain is not None:
            load_client_chain(context, *self._chain)
        elif self.cert is not None and self.key is not None:
            load_client_chain(context, self.cert.read(), self.key.read())  # read together: one version of each
        return context

    def context(self, client_chain: tuple[bytes, bytes] | None = None) -> ssl.SSLContext:
        """The current context: the same object until a file changed or `client_chain` (an exec plugin's
        certificate and key, replacing the kubeconfig's) is another one."""
        if client_chain is not None and client_chain != self._chain:
            self._rebuild(client_chain)
        elif self.clock.monotonic() >= self._next_check:
            self.reload()
        return self._context

    def reload(self) -> bool:
        """Check the files now (after a 401, or when the interval passed); True if the context changed."""
        self._next_check = self.clock.monotonic() + self.check_interval
        signatures = self._stat()
        if signatures == self._signatures:
            return False
        return self._rebuild(self._chain, signatures)

    def _rebuild(self, chain: tuple[bytes, bytes] | None, signatures: tuple[Signature, ...] | None = None) -> bool:
        previous = self._chain
        self._chain = chain
        try:
            self._context = self._build()
        except (OSError, ssl.SSLError, ValueError) as err:
            self._chain = previous
            log.warning("TLS files changed but could not be loaded (kept the previous ones): %s (%s)", err,
                        self._files())
            return False
        if signatures is not None:
            self._signatures = signatures
        log.info("TLS settings reloaded (%s)", self._files())
        return True
