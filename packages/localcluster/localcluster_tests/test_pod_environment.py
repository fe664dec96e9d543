"""A pod of the process runner starts with a minimal environment, never the server's whole one.

The server's environment may hold the developer's cloud keys and tokens; whoever may create a pod
(or exec into one) must not read them. A pod gets PATH, HOME and LANG (from the server's
environment, or defaults), TMPDIR if set, HOSTNAME, what puts it on its own network (the pod network's
preloaded libraries and their settings, none of them the server's; the ssh stand-in's directory first on PATH,
and its socket), where the API server is (the `kubernetes` Service's variables), and what its spec declares.
"""

from __future__ import annotations

import os
import pwd

import pytest

from localcluster.kubelet import remote_shell
from localcluster.kubelet.container_env import DEFAULT_LANG, DEFAULT_PATH, base_environment
from localcluster.kubelet.network.pod_network import VARIABLES
from localcluster.testing import Kubectl

from .process_runner_support import log_text, process_pod, running, wait_phase, wait_pod

pytestmark = pytest.mark.runner("process")

SECRET = "AWS_SECRET_ACCESS_KEY"


def variables(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


async def test_a_pod_sees_only_path_home_lang_hostname_and_its_spec(cluster, core, monkeypatch):
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.setenv(SECRET, "fake-developer-key")
    monkeypatch.setenv("GITHUB_TOKEN", "fake-token")
    pod_name = {"fieldRef": {"fieldPath": "metadata.name"}}
    body = process_pod("envdump", "env", env=[{"name": "FROM_SPEC", "value": "declared"},
                                              {"name": "POD", "valueFrom": pod_name}])
    await core.create_namespaced_pod("default", body)
    await wait_phase(core, "envdump", "Succeeded")
    seen = variables(await log_text(core, "envdump"))
    api = {name for name in seen if name.startswith("KUBERNETES_")}  # where the API server is (test_pod_network)
    assert set(seen) == {"PATH", "HOME", "LANG", "HOSTNAME", "FROM_SPEC", "POD", *VARIABLES, *remote_shell.VARIABLES,
                         *api}, seen
    assert "KUBERNETES_SERVICE_HOST" in api and len(api) == 8, api
    assert (seen["FROM_SPEC"], seen["POD"], seen["HOSTNAME"]) == ("declared", "envdump", "envdump")
    # PATH: the server's, behind the directory of the ssh stand-in (remote_shell.py) alone.
    shell_bin, _, path = seen["PATH"].partition(os.pathsep)
    assert os.listdir(shell_bin) == ["ssh"], shell_bin
    assert {"PATH": path, "HOME": seen["HOME"], "LANG": seen["LANG"]} == base_environment()


async def test_a_spec_may_set_a_name_the_server_also_has(cluster, core, monkeypatch):
    monkeypatch.setenv(SECRET, "fake-developer-key")
    monkeypatch.setenv("GITHUB_TOKEN", "fake-token")
    body = process_pod("named", "sh", "-c", f'echo "${{{SECRET}-unset}} ${{GITHUB_TOKEN-unset}}"',
                       env=[{"name": SECRET, "value": "the pod's own"}])
    await core.create_namespaced_pod("default", body)
    await wait_phase(core, "named", "Succeeded")
    assert await log_text(core, "named") == "the pod's own unset\n"


async def test_exec_does_not_see_the_servers_environment_either(cluster, core, tmp_path, monkeypatch):
    monkeypatch.setenv(SECRET, "fake-developer-key")
    await core.create_namespaced_pod("default", process_pod("box", "sleep", "60"))
    await wait_pod(core, "box", running)
    done = await Kubectl(cluster, tmp_path).ok("exec", "box", "--", "sh", "-c", f"echo ${{{SECRET}-unset}}")
    assert done.out == "unset\n"


def test_the_defaults_when_the_server_has_none():
    assert base_environment({}) == {"PATH": DEFAULT_PATH, "LANG": DEFAULT_LANG,
                                    "HOME": pwd.getpwuid(os.getuid()).pw_dir}
    assert base_environment({"PATH": "/opt/bin", "HOME": "/h", "LANG": "de_DE.UTF-8", SECRET: "k"}) == {
        "PATH": "/opt/bin", "HOME": "/h", "LANG": "de_DE.UTF-8"}
    assert base_environment({"TMPDIR": "/scratch", "LC_ALL": "C"})["TMPDIR"] == "/scratch"
    assert "LC_ALL" not in base_environment({"LC_ALL": "C"})
