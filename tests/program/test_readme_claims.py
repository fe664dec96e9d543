"""What README.md and docs/ claim beside their shell blocks (test_readme.py runs those): `make local`'s install and
flags, the kubeconfig order, the links, the README's length, the uninstall, the operations page, the namespaced
install as written."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
import yaml

from controller.cmd import cli
from controller.runtime import manager
from kubeclient import loading
from kubeclient.settings import ClientSettings

from .subprocesses import ROOT
from .test_readme import DOCS, README, blocks, fenced  # noqa: F401


def make_dry_run(*arguments: str) -> list[list[str]]:
    # Under `make test` (CI) the variables of the outer make would turn this into a sub-make that prints
    # "Entering/Leaving directory" lines: run it as a user's own make.
    outer = {"MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES"}
    env = {name: value for name, value in os.environ.items() if name not in outer}
    done = subprocess.run(["make", "--no-print-directory", "--dry-run", "local", *arguments], cwd=ROOT,
                          capture_output=True, text=True, timeout=30, check=False, env=env)
    assert done.returncode == 0, done.stderr
    return [line.split() for line in done.stdout.splitlines()]


@pytest.mark.slow  # make
def test_make_local_installs_kubectl_and_passes_flags(tmp_path):
    """On a fresh machine (no virtualenv yet), `make local` leaves the kubectl the Quick start uses."""
    venv = tmp_path / "venv"
    steps = make_dry_run(f"VENV={venv}")
    assert [str(venv / "bin" / "python"), "scripts/install_kubectl.py", "--only", "kubectl",
            "--dest", str(venv / "bin")] in steps
    local = str(venv / "bin" / "genericjob-controller")
    assert steps[-1] == [local, "local", "--apply", "examples/generic-example.yaml"]
    assert make_dry_run(f"VENV={venv}", "ARGS=--port 7443 --logs")[-1] == [
        local, "local", "--apply", "examples/generic-example.yaml", "--port", "7443", "--logs"]
    assert make_dry_run(f"VENV={venv}", "APPLY=", "ARGS=--port 7443")[-1] == [local, "local", "--port", "7443"]


async def test_the_kubeconfig_order_of_the_readme_and_help_is_the_codes(tmp_path, monkeypatch):
    """`run` without --kubeconfig: $KUBECONFIG first, then the in-cluster configuration, then ~/.kube/config."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "http://from-kubeconfig:6443"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    monkeypatch.setattr(loading, "in_cluster", lambda directory=None: True)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    assert (await manager.client_settings(None)).server == "http://from-kubeconfig:6443"  # before in-cluster
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("HOME", str(tmp_path))  # a ~/.kube/config there would not be read either
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text(kubeconfig.read_text())
    chosen = []

    async def in_cluster_settings(clock: object = None) -> ClientSettings:  # load_settings passes its clock
        chosen.append("in-cluster")
        return ClientSettings("https://10.96.0.1:443", credentials=None, source="in-cluster")

    monkeypatch.setattr(loading, "in_cluster_settings", in_cluster_settings)
    await manager.client_settings(None)
    assert chosen == ["in-cluster"]
    order = ("$KUBECONFIG", "in-cluster", "~/.kube/config")
    operations = (DOCS / "operations.md").read_text()  # run's flags (README's, before issue 24)
    [row] = [line for line in operations.splitlines() if line.startswith("| `--kubeconfig` |")]
    [action] = [a for a in cli.build_parser({}).commands["run"]._actions if "--kubeconfig" in a.option_strings]
    for text in (row, action.help):
        assert sorted(order, key=text.index) == list(order), text


def test_the_documentation_links_only_to_what_a_clone_has():
    """A relative link (`[text](path)`) in README.md or docs/ names a file of the repository: a clone has no
    ../shared/spec."""
    for page in (README, *sorted((ROOT / "docs").glob("*.md"))):
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if not re.match(r"[a-z]+://", target):
                assert (page.parent / target).resolve().is_relative_to(ROOT), (page.name, target)
                assert (page.parent / target).exists(), (page.name, target)
        assert "shared/spec" not in page.read_text(), page.name


def test_the_readme_is_short_and_links_the_rest():
    """About 200 lines: what it is, the two commands, the Quick start, the install, links; the rest is in docs/."""
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    for heading in ("## The two commands", "## Quick start with kubectl", "## Install on a cluster",
                    "### The image", "### Install with kustomize", "### Install with Helm", "## Documentation"):
        assert f"\n{heading}\n" in text, heading
    for page in ("user-guide.md", "local.md", "operations.md", "development.md"):
        assert f"(docs/{page})" in text, page


def _uninstall_commands() -> list[list[str]]:
    [block] = [b for b in blocks() if "helm uninstall genericjob-controller" in b.text]
    return [c.split() for c in block.commands if c.startswith("kubectl delete")]


def test_the_uninstall_deletes_every_crd_only_when_asked():
    """Deleting the CRDs names every CRD the install makes (both job kinds' and the PodGroup's); removing only
    the controller deletes none."""
    fast = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's: 0.1 s for the CRDs, where Python's takes 2.5 s
    crds = {yaml.load(p.read_text(), Loader=fast)["metadata"]["name"]
            for p in (ROOT / "manifests" / "crds").glob("*.yaml")}
    [block] = [b for b in blocks() if "kubectl delete crd genericjobs" in b.text]
    [command] = block.commands
    assert command.split()[:3] == ["kubectl", "delete", "crd"] and set(command.split()[3:]) == crds
    assert all("crd" not in words[2].split(",") for words in _uninstall_commands())
    text = re.sub(r"<!--.*?-->", "", (DOCS / "operations.md").read_text())  # a generated span's markers
    from controller.kinds import registry

    kinds = [kind.api.kind for kind in registry.KINDS.values()]
    assert f"deletes every {', '.join(kinds[:-1])} and {kinds[-1]}" in text


@pytest.mark.slow  # kubectl
@pytest.mark.parametrize("variant", ["manifests", "overlays/namespaced", "overlays/monitoring"])
def test_removing_only_the_controller_removes_all_it_installed_but_the_crds(variant):
    """Every object of the install (kustomize, cluster-wide or namespaced: its Roles and RoleBindings in team-a and
    team-b too) is matched by one of the removal commands, by namespace, or by kind and label selector (with
    --all-namespaces for a namespaced kind outside the deleted namespace); the CRDs by none."""
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "kubectl"), "kustomize", str(ROOT / variant)],
                          capture_output=True, text=True, timeout=60, check=False, env={**os.environ, "KUBERC": "off"})
    assert done.returncode == 0, done.stderr
    deleted_namespaces, selections = set(), []
    for words in _uninstall_commands():
        kinds = words[2]
        if kinds == "namespace":
            deleted_namespaces.update(words[3:])
            continue
        selector = dict(pair.split("=") for pair in words[words.index("-l") + 1].split(","))
        selections.append(({k.lower() for k in kinds.split(",")}, selector, "--all-namespaces" in words))
    for obj in yaml.safe_load_all(done.stdout):
        kind, meta = obj["kind"].lower(), obj["metadata"]
        labels, namespace = meta.get("labels") or {}, meta.get("namespace")
        removed = (kind == "namespace" and meta["name"] in deleted_namespaces) or namespace in deleted_namespaces \
            or any(kind in kinds and selector.items() <= labels.items() and (namespace is None or everywhere)
                   for kinds, selector, everywhere in selections)
        if kind == "customresourcedefinition":
            assert not removed, meta["name"]
        else:
            assert removed, f"{variant}: {obj['kind']} {namespace}/{meta['name']} is left behind"


@pytest.mark.slow  # helm
def test_the_operations_page_speaks_of_every_kind_and_the_helm_it_was_tested_with():
    """--kinds' default, the RBAC section and the uninstall name every registered kind; the Helm versions that
    work are stated, with the one the tests use (scripts/install_kubectl.py's)."""
    from controller.kinds import registry

    text = (DOCS / "operations.md").read_text()
    [row] = [line for line in text.splitlines() if line.startswith("| `--kinds` |")]
    rbac = text[text.index("## RBAC"):text.index("## Flags")]
    for kind in registry.KINDS.values():
        assert kind.api.kind in row, row
        assert kind.api.plural in rbac, kind.api.plural
    helm = subprocess.run([str(ROOT / ".venv" / "bin" / "helm"), "version", "--short"], capture_output=True,
                          text=True, timeout=30, check=True).stdout.strip().split("+")[0]
    assert "Helm 3 and Helm 4" in text and f"Helm {helm}" in text, helm


@pytest.mark.slow  # kubectl
async def test_the_namespaced_install_works_as_written_once_its_namespaces_exist(cluster, tmp_path):
    """docs/operations.md's namespaced install, against localcluster: without the namespaces the apply is refused
    naming one (what the page warns of), and the page's commands, in order, install it whole."""
    from localcluster.testing import Kubectl

    kubectl = Kubectl(cluster, tmp_path)
    refused = await kubectl.run("apply", "-k", str(ROOT / "overlays" / "namespaced"))
    assert refused.code != 0 and 'namespaces "team-a" not found' in refused.err, refused.err
    [block] = [b for b in blocks() if "kubectl create namespace team-a" in b.text]
    for words in (command.split() for command in block.commands):
        assert words[0] == "kubectl", words
        result = await kubectl.run(*words[1:])  # the apply again, over what the refused one made
        assert result.code == 0, (words, result.err)
    roles = await kubectl.ok("get", "role", "-A", "-l", "app.kubernetes.io/name=genericjob-controller",
                             "-o", "jsonpath={.items[*].metadata.namespace}")
    assert set(roles.out.split()) == {"genericjob-system", "team-a", "team-b"}
