"""Kubeconfigs for the credential tests: an exec plugin (a small Python script) that asks localcluster for tokens
living a few seconds and logs each of its runs, token files, client certificates.

The plugin goes by the real time, or by a test's clock (tests/kubeclient/clock.py) when given one: it reads the
time from the file the clock writes, and its tokens expire by that time (the test makes localcluster go by it
too). A gate holds a run until the test opens it: a run that takes as long as the test needs."""

from __future__ import annotations

import copy
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from .clock import FakeClock

PLUGIN = """\
#!{python}
import time

started = time.time()  # before the other imports: as near the process's start as its log can say
import json, os, ssl, sys, urllib.request
from datetime import datetime, timezone

info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
mode = os.environ["PLUGIN_MODE"]
lifetime = float(os.environ["PLUGIN_LIFETIME"])
clock = os.environ.get("PLUGIN_CLOCK")
if clock:
    with open(clock) as f:
        now = float(f.read())  # the test's time, when the credential is asked for
else:
    now = time.time()
with open(os.environ["PLUGIN_STARTS"], "a") as starts:  # after the clock is read: the test may move it on
    starts.write(str(started) + "\\n")
time.sleep(float(os.environ["PLUGIN_DELAY"]))  # a run that takes a while: runs in parallel would overlap
gate = os.environ.get("PLUGIN_GATE")
if gate:
    deadline = time.monotonic() + 60  # a test that failed with the gate closed leaves no process behind for long
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.01)
if mode == "fail" or os.path.exists(os.environ.get("PLUGIN_FAIL_FILE", "/nonexistent")):
    print(os.environ.get("PLUGIN_STDERR", "error: the session expired, log in again"), file=sys.stderr)
    sys.exit(3)
status = {{}}
if mode == "fixed":
    status["token"] = "a.token.nobody.issued"
elif mode == "certificate":
    status["clientCertificateData"] = open(os.environ["PLUGIN_CERT"]).read()
    status["clientKeyData"] = open(os.environ["PLUGIN_KEY"]).read()
else:
    request = urllib.request.Request(
        os.environ["CLUSTER_URL"] + "/_localcluster/tokens", method="POST",
        data=json.dumps({{"user": "plugin-user", "groups": json.loads(os.environ.get("PLUGIN_GROUPS", "[]")),
                          "expirationSeconds": lifetime}}).encode(),
        headers={{"Authorization": "Bearer " + os.environ["CLUSTER_ADMIN"], "Content-Type": "application/json"}})
    context = ssl.create_default_context(cafile=os.environ["CLUSTER_CA"])
    with urllib.request.urlopen(request, context=context) as answer:
        status["token"] = json.load(answer)["token"]
expiry = datetime.fromtimestamp(now + lifetime, timezone.utc)
status["expirationTimestamp"] = expiry.isoformat().replace("+00:00", "Z")
with open(os.environ["PLUGIN_LOG"], "a") as log:
    log.write(json.dumps({{"start": started, "end": time.time(), "now": now, "expires": now + lifetime,
                          "token": status.get("token"), "info": info}}) + "\\n")
print(json.dumps({{"apiVersion": info["apiVersion"], "kind": "ExecCredential", "status": status}}))
"""


@dataclass
class Plugin:
    path: Path
    log: Path
    starts_log: Path
    gate: Path

    def runs(self) -> list[dict]:
        """The runs that gave a credential, each with start and end (the real time), now and expires (the
        plugin's clock), token and info (its KUBERNETES_EXEC_INFO)."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def starts(self) -> int:
        """How many runs have started (one in progress included)."""
        return len(self.starts_log.read_text().splitlines()) if self.starts_log.exists() else 0

    def hold(self) -> None:
        """Runs from now on wait at the gate until `release()` (a plugin made with `gated=True`)."""
        self.gate.unlink(missing_ok=True)

    def release(self) -> None:
        self.gate.touch()


class ClusterOfProcess:
    """What these helpers read of a LocalCluster, for one in another process (tests/program's
    LocalClusterProcess): its URL, admin token and certificate, and its kubeconfig."""

    def __init__(self, process) -> None:
        self.url, self.admin_token = process.url, process.credentials.token
        self.certificate = process.credentials.certificate
        self._kubeconfig = yaml.safe_load(process.kubeconfig.read_text())

    def kubeconfig(self) -> dict:
        return copy.deepcopy(self._kubeconfig)


def base_kubeconfig(cluster, user: dict, ca_file: Path | None = None) -> dict:
    config = cluster.kubeconfig()
    if ca_file is not None:
        del config["clusters"][0]["cluster"]["certificate-authority-data"]
        config["clusters"][0]["cluster"]["certificate-authority"] = ca_file.name  # relative to the kubeconfig
    config["users"][0]["user"] = user
    return config


def write(directory: Path, config: dict) -> Path:
    path = directory / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def exec_kubeconfig(cluster, directory: Path, mode: str = "token", lifetime: float = 600.0, delay: float = 0.0,
                    provide_cluster_info: bool = True, clock: FakeClock | None = None, gated: bool = False,
                    args: tuple[str, ...] = (), **env: str) -> tuple[Path, Plugin]:
    """A kubeconfig whose user is the plugin (relative command, as client-go resolves it), and the plugin: its
    tokens live `lifetime` seconds of `clock` (of the real time without one); `gated`: it has a gate, open."""
    (directory / "ca.crt").write_bytes(cluster.certificate)
    plugin = Plugin(directory / "plugin.py", directory / "plugin-runs.jsonl", directory / "plugin-starts.log",
                    directory / "plugin-gate")
    plugin.path.write_text(PLUGIN.format(python=sys.executable))
    plugin.path.chmod(0o755)
    variables = {"PLUGIN_MODE": mode, "PLUGIN_LIFETIME": str(lifetime), "PLUGIN_DELAY": str(delay),
                 "PLUGIN_LOG": str(plugin.log), "PLUGIN_STARTS": str(plugin.starts_log), "CLUSTER_URL": cluster.url,
                 "CLUSTER_ADMIN": cluster.admin_token, "CLUSTER_CA": str(directory / "ca.crt"), **env}
    if clock is not None:
        variables["PLUGIN_CLOCK"] = str(clock.publish(directory / "clock"))
    if gated:
        plugin.release()
        variables["PLUGIN_GATE"] = str(plugin.gate)
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "./plugin.py", "args": list(args),
                     "env": [{"name": k, "value": v} for k, v in variables.items()],
                     "interactiveMode": "Never", "provideClusterInfo": provide_cluster_info,
                     "installHint": "the test writes it"}}
    return write(directory, base_kubeconfig(cluster, user)), plugin
