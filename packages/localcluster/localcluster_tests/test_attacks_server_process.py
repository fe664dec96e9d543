"""Issue 35, M3 and the kubeconfig write: a pod (a process of the same user) cannot read the server's environment,
memory or descriptors; the admin kubeconfig is written without following a link and never into a directory
others may write. Each attack is paired with the same thing done right."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from localcluster.auth.kubeconfig_file import UnsafeDirectory, private_directory
from localcluster.kubelet import process_guard

from .process_runner_support import process_pod, wait_pod


def succeeded_or_failed(pod) -> bool:
    return pod.status.phase in ("Succeeded", "Failed")


PROBE = ("for f in environ maps; do if cat /proc/$1/$f >/dev/null 2>&1; then echo read $f; else echo refused $f; fi;"
         " done; if ls /proc/$1/fd >/dev/null 2>&1; then echo read fd; else echo refused fd; fi;"
         " grep CapEff /proc/self/status; grep -c = /proc/self/environ")
CAP_SYS_PTRACE = 1 << 19


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl and /proc are Linux's")
@pytest.mark.runner("process")
async def test_a_pod_cannot_read_the_server_s_environment_memory_or_descriptors(cluster, core):
    assert process_guard.dumpable() is False  # the server (this process) marked itself when it started
    server = os.getpid()
    await core.create_namespaced_pod("default", process_pod("snoop", "sh", "-c", PROBE, "sh", str(server)))
    pod = await wait_pod(core, "snoop", succeeded_or_failed, timeout=30)
    assert pod.status.phase == "Succeeded"
    lines = (await core.read_namespaced_pod_log("snoop", "default")).splitlines()
    assert int(lines[4]) > 0  # the pod reads its own environment: the probe works, the server's is what is closed
    if os.geteuid() != 0:  # a developer's run: the pod is this user's process, kept out by the server's prctl
        assert lines[:3] == ["refused environ", "refused maps", "refused fd"], lines
    else:  # root's pods would pass any same-user check: they start without CAP_SYS_PTRACE, as in a container
        assert not int(lines[3].split()[1], 16) & CAP_SYS_PTRACE, lines


def test_the_kubeconfig_write_replaces_a_planted_link_instead_of_following_it(cluster, tmp_path):
    directory = private_directory(tmp_path / "cache")
    elsewhere = tmp_path / "attacker-readable"
    elsewhere.write_text("")
    (directory / "kubeconfig").symlink_to(elsewhere)
    written = cluster.write_kubeconfig(directory / "kubeconfig")
    assert elsewhere.read_text() == ""  # the link's target got nothing
    assert not written.is_symlink() and cluster.admin_token in written.read_text()
    assert written.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in directory.iterdir()] == ["kubeconfig"]  # no temporary file left behind


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_a_cache_directory_others_may_write_is_refused_naming_the_path_and_the_fix(cluster, tmp_path, mode):
    loose = tmp_path / ".cache"
    loose.mkdir()
    loose.chmod(mode)
    with pytest.raises(UnsafeDirectory) as refused:
        private_directory(loose)
    assert str(loose) in refused.value.strerror and f"chmod 700 {loose}" in refused.value.strerror
    with pytest.raises(UnsafeDirectory):
        cluster.write_kubeconfig(loose / "kubeconfig")
    assert not (loose / "kubeconfig").exists() and loose.stat().st_mode & 0o777 == mode  # untouched
    # Done right: a directory only readable by others is ours to tighten, and the kubeconfig is written.
    loose.chmod(0o755)
    assert cluster.write_kubeconfig(private_directory(loose) / "kubeconfig").exists()
    assert loose.stat().st_mode & 0o777 == 0o700


def test_a_cache_directory_of_another_user_is_refused(cluster):
    if os.geteuid() != 0:
        pytest.skip("making a directory another user owns needs root (CI runs as root)")
    base = Path(tempfile.mkdtemp(prefix="localcluster-cache-"))
    try:
        theirs = base / ".cache"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, 65534, 65534)
        with pytest.raises(UnsafeDirectory) as refused:
            private_directory(theirs)
        assert "belongs to uid 65534" in refused.value.strerror and str(theirs) in refused.value.strerror
        with pytest.raises(UnsafeDirectory):
            cluster.write_kubeconfig(theirs / "kubeconfig")
        assert not (theirs / "kubeconfig").exists()
    finally:
        shutil.rmtree(base)


def test_a_sticky_world_writable_directory_is_accepted_for_an_explicit_path(cluster):
    """/tmp: others may create names there but not remove or replace ours, and the write makes a fresh name."""
    sticky = Path(tempfile.mkdtemp(prefix="localcluster-sticky-"))
    try:
        sticky.chmod(0o1777)
        written = cluster.write_kubeconfig(sticky / "kubeconfig")
        assert written.stat().st_mode & 0o777 == 0o600
    finally:
        shutil.rmtree(sticky)


CAPS = ("sh", "-c", "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status; cd \"$(mktemp -d)\" && touch f && "
        "chown 1234 f && echo chown ok; mount -t tmpfs none . 2>/dev/null && echo mounted || echo mount refused")


@pytest.mark.skipif(not sys.platform.startswith("linux") or os.geteuid() != 0, reason="a root server's pods")
@pytest.mark.runner("process")
async def test_a_root_servers_pod_has_a_container_runtimes_default_capabilities_only(cluster, core):
    """Issue 47: a root server's pods kept every capability but CAP_SYS_PTRACE (CAP_SYS_ADMIN, CAP_SYS_MODULE...).
    Now each set is Docker's and containerd's default (14 capabilities) or less: a default one works (chown), the
    attack (a mount, CAP_SYS_ADMIN's) is refused."""
    await core.create_namespaced_pod("default", process_pod("caps", *CAPS))
    pod = await wait_pod(core, "caps", succeeded_or_failed, timeout=30)
    assert pod.status.phase == "Succeeded"
    lines = (await core.read_namespaced_pod_log("caps", "default")).splitlines()
    sets = {line.split(":")[0]: int(line.split()[1], 16) for line in lines[:5]}
    assert sets["CapBnd"] == sets["CapEff"] == sets["CapPrm"] == process_guard.RUNTIME_DEFAULT_MASK, lines
    assert sets["CapInh"] & ~process_guard.RUNTIME_DEFAULT_MASK == 0 and sets["CapAmb"] == 0, lines
    assert lines[5:] == ["chown ok", "mount refused"], lines
