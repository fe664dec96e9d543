"""The envtest tier's control plane: a real etcd, kube-apiserver and kube-controller-manager, as processes.

As controller-runtime's envtest: the binaries come from the directory KUBEBUILDER_ASSETS names, else from the
workspace's ../shared/envtest (its `unpack` script prints such a directory). Each runs on free loopback ports
with a private PKI (pki.py); the API server authenticates by a static token file (an admin in system:masters,
and users with no rights for the RBAC tests) and authorizes by RBAC. The controller manager runs only the
controllers a test cluster needs without nodes: garbage collection, namespace deletion and the ServiceAccount
controller (every namespace's `default` ServiceAccount, without which no pod can be created). No scheduler and
no kubelet: tests/real/kubelet.py plays them. Everything is stopped by the pids this module started.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from .pki import write_pki

ROOT = Path(__file__).resolve().parents[2]
SHARED_ASSETS = ROOT.parent / "shared" / "envtest"
ADMIN_TOKEN = "envtest-admin-token"
USERS = {  # token: (user, groups): a user with no rights, for the authorizer's refusals
    "envtest-nobody-token": ("nobody", ()),
}
CONTROLLERS = ("garbage-collector-controller,namespace-controller,serviceaccount-controller,"
               "root-ca-certificate-publisher-controller")  # each namespace's kube-root-ca.crt, as localcluster's
HOW_TO_GET = ("no envtest assets (kube-apiserver, etcd): set KUBEBUILDER_ASSETS, e.g. "
              "`export KUBEBUILDER_ASSETS=$(setup-envtest use -p path 1.35.x)` with controller-runtime's "
              "setup-envtest (go install sigs.k8s.io/controller-runtime/tools/setup-envtest@latest)")


class AssetsMissing(RuntimeError):
    pass


def find_assets() -> Path:
    """The directory holding kube-apiserver and etcd (and kube-controller-manager): KUBEBUILDER_ASSETS, else what
    ../shared/envtest/unpack prints. AssetsMissing says why neither serves."""
    named = os.environ.get("KUBEBUILDER_ASSETS")
    if named:
        found = Path(named)
        missing = [b for b in ("kube-apiserver", "etcd") if not (found / b).exists()]
        if missing:
            raise AssetsMissing(f"KUBEBUILDER_ASSETS={named} lacks {', '.join(missing)}")
        return found
    unpack = SHARED_ASSETS / "unpack"
    if not unpack.exists():
        raise AssetsMissing(HOW_TO_GET)
    done = subprocess.run([str(unpack)], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise AssetsMissing(f"{unpack}: {done.stderr.strip()}")
    return Path(done.stdout.strip())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ControlPlane:
    """etcd, kube-apiserver and kube-controller-manager for one test session (one per xdist worker)."""

    def __init__(self, assets: Path) -> None:
        self.assets = assets
        # etcd's data on tmpfs where there is one: etcd 3.4 fsyncs every write, a disk's cost for nothing here
        shm = Path("/dev/shm")
        self.dir = Path(tempfile.mkdtemp(prefix="envtest-", dir=shm if shm.is_dir() else None))
        self.processes: dict[str, subprocess.Popen] = {}
        self.pki = write_pki(self.dir)
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.etcd_url = ""
        self.ca_pem = self.pki["ca"].read_bytes()

    # --- the processes ------------------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str]) -> None:
        with open(self.dir / f"{name}.log", "ab") as log:  # the process keeps its own descriptor
            self.processes[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                                    preexec_fn=_die_with_parent)

    def log_tail(self, name: str, lines: int = 15) -> str:
        path = self.dir / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def _wait(self, name: str, ready, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.processes[name].poll() is not None:
                raise RuntimeError(f"{name} exited ({self.processes[name].returncode}):\n{self.log_tail(name)}")
            if ready():
                return
            time.sleep(0.1)
        raise RuntimeError(f"{name} not ready in {timeout}s:\n{self.log_tail(name)}")

    def start(self, before_controllers=lambda: None) -> ControlPlane:
        """Start etcd and the API server, call `before_controllers()`, then start the controller manager: what is
        installed before it (the session's CRDs) its garbage collector knows at once, instead of at its discovery's
        next round, 30 s later (a job's children left until then)."""
        try:
            self._start_etcd()
            self.start_apiserver()
            before_controllers()
            if (self.assets / "kube-controller-manager").exists():
                self._start_controller_manager()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_etcd(self) -> None:
        client, peer = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client}"
        self._spawn("etcd", [
            str(self.assets / "etcd"), "--data-dir", str(self.dir / "etcd"), "--name", "envtest",
            "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
            "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls",
            f"http://127.0.0.1:{peer}", "--initial-cluster", f"envtest=http://127.0.0.1:{peer}",
            "--snapshot-count", "10000", "--log-level", "warn"])
        self._wait("etcd", lambda: _get(f"{self.etcd_url}/health") is not None, 60)

    def start_apiserver(self) -> None:
        """Start (or start again, after stop_apiserver) the API server on the same port, etcd and PKI, and wait until
        it is ready."""
        self.spawn_apiserver()
        self._wait("kube-apiserver", self.apiserver_ready, 120)

    def apiserver_ready(self) -> bool:
        return _get(f"{self.url}/readyz", self.ca_pem, ADMIN_TOKEN) == b"ok"

    def spawn_apiserver(self) -> None:
        """Start the API server's process (from the thread that lives as long as the tests: the process dies with
        the thread that made it, PR_SET_PDEATHSIG's rule), not waiting for it."""
        tokens = self.dir / "tokens.csv"
        rows = [f'{ADMIN_TOKEN},envtest-admin,envtest-admin,"system:masters"']
        rows += [f'{token},{user},{user},"{",".join(groups)}"' for token, (user, groups) in USERS.items()]
        tokens.write_text("\n".join(rows) + "\n")
        self._spawn("kube-apiserver", [
            str(self.assets / "kube-apiserver"), f"--etcd-servers={self.etcd_url}",
            "--bind-address=127.0.0.1", f"--secure-port={self.port}",
            f"--tls-cert-file={self.pki['cert']}", f"--tls-private-key-file={self.pki['key']}",
            f"--client-ca-file={self.pki['ca']}", f"--token-auth-file={tokens}",
            "--authorization-mode=RBAC", f"--service-account-issuer={self.url}",
            f"--service-account-key-file={self.pki['sa_pub']}",
            f"--service-account-signing-key-file={self.pki['sa_key']}",
            "--service-cluster-ip-range=10.0.0.0/24", "--endpoint-reconciler-type=none",
            "--enable-aggregator-routing=true", "--allow-privileged=true", "--disable-admission-plugins=",
            f"--cert-dir={self.dir / 'certs'}", "--v=0"])

    def stop_apiserver(self) -> None:
        _stop(self.processes.pop("kube-apiserver", None))

    def _start_controller_manager(self) -> None:
        kubeconfig = self.dir / "kcm.kubeconfig"
        kubeconfig.write_text(_kubeconfig_yaml(self.url, self.pki["ca"], ADMIN_TOKEN))
        self._spawn("kube-controller-manager", [
            str(self.assets / "kube-controller-manager"), f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
            "--leader-elect=false", f"--controllers={CONTROLLERS}", "--secure-port=0",
            f"--root-ca-file={self.pki['ca']}",
            "--concurrent-gc-syncs=5", "--v=0"])
        # pods need their namespace's default ServiceAccount (the ServiceAccount admission): wait for default's
        self._wait("kube-controller-manager", lambda: _get(
            f"{self.url}/api/v1/namespaces/default/serviceaccounts/default", self.ca_pem, ADMIN_TOKEN) is not None, 60)

    def stop(self) -> None:
        for name in ("kube-controller-manager", "kube-apiserver", "etcd"):
            _stop(self.processes.pop(name, None))
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- clients ------------------------------------------------------------------------------

    def kubeconfig(self, token: str = ADMIN_TOKEN) -> dict:
        """A kubeconfig (as a dict) for the API server, as a user with `token`."""
        return {"apiVersion": "v1", "kind": "Config", "current-context": "envtest",
                "clusters": [{"name": "envtest", "cluster": {
                    "server": self.url, "certificate-authority-data": base64.b64encode(self.ca_pem).decode()}}],
                "users": [{"name": "envtest", "user": {"token": token}}],
                "contexts": [{"name": "envtest", "context": {"cluster": "envtest", "user": "envtest"}}]}


def _die_with_parent() -> None:
    """In the child: SIGKILL when the test process dies (prctl PR_SET_PDEATHSIG), so a killed pytest leaves no
    control plane behind."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


def _stop(process: subprocess.Popen | None, grace: float = 10.0) -> None:
    """SIGTERM the process this module started (its own session), then SIGKILL after `grace`."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _get(url: str, ca_pem: bytes | None = None, token: str | None = None) -> bytes | None:
    context = ssl.create_default_context(cadata=ca_pem.decode()) if ca_pem else None
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=2, context=context) as answer:
            return answer.read()
    except (OSError, urllib.error.URLError):
        return None


def _kubeconfig_yaml(url: str, ca: Path, token: str) -> str:
    return (f"apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n"
            f"    server: {url}\n    certificate-authority: {ca}\nusers:\n- name: u\n  user:\n    token: {token}\n"
            f"contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n")
