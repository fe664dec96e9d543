"""An exec credential plugin (`aws eks get-token`, `gke-gcloud-auth-plugin`, `kubelogin`), run as client-go runs it.

client-go (plugin/pkg/client/auth/exec) runs the command with the kubeconfig's args and env added to ours,
`KUBERNETES_EXEC_INFO` holding an ExecCredential whose spec says `interactive: false` (the controller has no
terminal: stdin is not one, and the plugin gets none) and, with `provideClusterInfo: true`, the cluster it
is for. It reads an ExecCredential from stdout: a token or a client certificate and key, perhaps with an
`expirationTimestamp`. Here, as there, the plugin runs again when that time comes and after a 401, and only
one run is in flight: the requests that need a credential meanwhile wait on it. Unlike client-go it runs
before the expiry: in the background from a fifth of the credential's life before it (at most 10 s + 5
minutes before), requests still sent with the current one, so that a slow plugin holds nothing up (a renewal of a
leader's Lease least of all); and requests wait for it only in the last tenth (at most 10 s), so that none
is sent with a token about to lapse. kubernetes_asyncio's ExecProvider runs plugins too, but reads
`interactive` from our stdout, sends no cluster info and has no timeout: this is its loop, with those.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
from dataclasses import dataclass
from datetime import datetime

from .clock import SYSTEM_CLOCK, Clock
from .kube_config_parts import ConfigException
from .token_sources import SingleFlight, TokenSource, bearer, renewal_times

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
EXEC_EXTENSION = "client.authentication.k8s.io/exec"  # a cluster extension passed to the plugin as spec.cluster.config
MAX_MARGIN = 10.0
RUN_TIMEOUT = 120.0  # client-go has none; a hung plugin would hold every request forever


@dataclass(frozen=True)
class ExecCredential:
    token: str | None
    client_chain: tuple[bytes, bytes] | None
    expires: float | None  # expirationTimestamp, in seconds since the epoch (the clock's time())
    renew: float  # the time from which the plugin runs again in the background, requests still sent meanwhile
    must: float  # the time from which requests wait for the plugin's new credential


def cluster_info(cluster: dict, ca: bytes | None) -> dict:
    """spec.cluster as client-go's ConfigToExecCluster fills it (omitempty fields left out)."""
    info: dict = {"server": cluster.get("server", "")}
    for key in ("tls-server-name", "proxy-url"):
        if cluster.get(key):
            info[key] = cluster[key]
    if cluster.get("insecure-skip-tls-verify"):
        info["insecure-skip-tls-verify"] = True
    if ca:
        info["certificate-authority-data"] = base64.b64encode(ca).decode()
    if cluster.get("disable-compression"):
        info["disable-compression"] = True
    for extension in cluster.get("extensions") or ():
        if isinstance(extension, dict) and extension.get("name") == EXEC_EXTENSION:
            info["config"] = extension.get("extension")
    return info


class ExecPlugin(TokenSource):
    def __init__(self, config: dict, cluster: dict, ca: bytes | None, base_path: str = "",
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self.api_version = str(config.get("apiVersion") or "")
        if self.api_version not in API_VERSIONS:
            raise ConfigException(f"exec plugin: apiVersion {self.api_version or '(none)'} is not supported "
                                  f"(client-go takes {' or '.join(API_VERSIONS)})")
        command = str(config.get("command") or "")
        if not command:
            raise ConfigException("exec plugin: no command")
        # As client-go's kubeconfig loader: a relative path with a separator is relative to the kubeconfig.
        if os.sep in command and not os.path.isabs(command) and base_path:
            command = os.path.normpath(os.path.join(base_path, command))
        args = config.get("args") or []
        if not isinstance(args, list):
            raise ConfigException(f"exec plugin {command}: args is not a list")
        self.argv = [command, *map(str, args)]
        self.env = {str(e["name"]): str(e["value"]) for e in config.get("env") or () if isinstance(e, dict)}
        self.install_hint = str(config.get("installHint") or "").strip()
        if config.get("interactiveMode") == "Always":
            raise ConfigException(f"exec plugin {self._name()}: interactiveMode is Always, but the controller has no "
                                  f"terminal to give it (client-go: standard input is not a terminal)")
        spec: dict = {"interactive": False}
        if config.get("provideClusterInfo"):
            spec["cluster"] = cluster_info(cluster, ca)
        self.exec_info = json.dumps({"kind": "ExecCredential", "apiVersion": self.api_version, "spec": spec})
        self.credential: ExecCredential | None = None
        self.runs = 0
        self._flight: SingleFlight[bool] = SingleFlight()

    def _name(self) -> str:
        """The executable only, as client-go names it: its arguments and its stderr may carry secrets
        (`--oidc-client-secret=...`, a refresh token in an error), and what names the plugin is logged."""
        return self.argv[0]

    def describe(self) -> str:
        return f"exec plugin {self._name()}"

    async def header(self) -> str | None:
        now = self.clock.time()
        if self.credential is None or now >= self.credential.must:
            await self._flight.run(self._run)
        elif now >= self.credential.renew:
            self._flight.start(self._run, self.describe())
        assert self.credential is not None
        return bearer(self.credential.token) if self.credential.token else None

    def client_chain(self) -> tuple[bytes, bytes] | None:
        return self.credential.client_chain if self.credential is not None else None

    async def _renew(self) -> bool:
        return await self._flight.run(self._run)

    async def _run(self) -> bool:
        self.runs += 1
        started = self.clock.time()
        try:
            process = await asyncio.create_subprocess_exec(
                *self.argv, env={**os.environ, **self.env, "KUBERNETES_EXEC_INFO": self.exec_info},
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL)  # not read: it may hold secrets (a refresh token in an error)
        except OSError as err:
            hint = f" ({self.install_hint})" if self.install_hint else ""
            raise ConfigException(f"exec plugin {self._name()}: {err.strerror or err}{hint}") from err
        try:
            stdout, _ = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise ConfigException(f"exec plugin {self._name()}: no answer within {RUN_TIMEOUT:.0f} s") from None
        except asyncio.CancelledError:  # the client is closing
            process.kill()
            await process.wait()  # reaped, its pipes closed while the loop runs
            raise
        if process.returncode != 0:
            raise ConfigException(f"exec plugin {self._name()}: exit code {process.returncode} (its stderr is not "
                                  f"logged: it may hold secrets; run the command by hand to see it)")
        credential = self._parse(stdout, started)
        previous, self.credential = self.credential, credential
        changed = previous is None or (previous.token, previous.client_chain) != (credential.token,
                                                                                   credential.client_chain)
        if changed:
            self.generation += 1
        return changed

    def _parse(self, stdout: bytes, started: float) -> ExecCredential:
        def fail(what: str) -> ConfigException:  # never quoting the output: it holds the credential
            return ConfigException(f"exec plugin {self._name()}: {what}")

        try:
            answer = json.loads(stdout)
        except ValueError:
            raise fail("its output is not an ExecCredential (not JSON)") from None
        if not isinstance(answer, dict) or answer.get("kind") != "ExecCredential":
            raise fail("its output is not an ExecCredential")
        if answer.get("apiVersion") != self.api_version:
            raise fail(f"it answered apiVersion {answer.get('apiVersion')}, the kubeconfig asks for {self.api_version}")
        status = answer.get("status")
        if not isinstance(status, dict):
            raise fail("its ExecCredential has no status")
        token = status.get("token") or None
        cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
        if bool(cert) != bool(key):
            raise fail("its status has a client certificate without its key or a key without its certificate")
        if token is None and not cert:
            raise fail("its status has neither a token nor a client certificate")
        expires = None
        if status.get("expirationTimestamp"):
            try:
                expires = datetime.fromisoformat(str(status["expirationTimestamp"])).timestamp()
            except ValueError:
                raise fail("its expirationTimestamp is not RFC 3339") from None
        renew, must = renewal_times(expires, max(0.0, expires - started), MAX_MARGIN) if expires is not None \
            else (float("inf"), float("inf"))
        chain = (str(cert).encode(), str(key).encode()) if cert and key else None
        return ExecCredential(str(token) if token else None, chain, expires, renew, must)

