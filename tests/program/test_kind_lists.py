"""The kind registry is the only list of kinds (controller/kinds/registry.py): every list of them outside the code
(the CRDs kustomize and the chart install, the RBAC rules, the user roles, the namespaced overlay, the
creator-privilege policy, the webhooks, the chart's notes, the docs' sentences and commands that name every kind)
is written from it by scripts/sync_kind_lists.py, and this fails while one is stale. A fourth kind
(tests/e2e/test_fourth_kind.py's) reaches every one of them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from controller.kinds import registry
from tests.e2e.test_fourth_kind import SHELLJOB

from .manifests_support import kind_lists_script as _script
from .test_docs import partial_lists

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # scripts/sync_kind_lists.py
def test_every_list_of_the_kinds_is_the_registrys():
    check = subprocess.run([sys.executable, str(ROOT / "scripts" / "sync_kind_lists.py"), "--check"],
                           capture_output=True, text=True, timeout=60, check=False)
    assert (check.returncode, check.stdout) == (0, ""), check.stdout


def test_a_kind_added_to_the_registry_reaches_every_list():
    script = _script()
    kinds = [*registry.KINDS.values(), SHELLJOB]
    written = script.generated(kinds)
    for name, text in written.items():
        assert "ShellJob" in text or "shelljob" in text, f"{name} does not list the new kind"
    # Every rule that lists the kinds lists the new one too, with the same subresources.
    rbac = written["manifests/rbac.yaml"]
    for sub in ("", "/finalizers", "/status"):
        assert f'"tensorflowtrainingjobs{sub}", "shelljobs{sub}"]' in rbac
    assert '"shelljobs", "shelljobs/status"]' in written["manifests/user-rbac.yaml"]
    assert written["overlays/namespaced/watched-namespaces-rbac.yaml"].count('"shelljobs') == 6  # two namespaces
    assert "  - crds/shelljob.yaml\n" in written["manifests/kustomization.yaml"]
    hooks = yaml.safe_load_all(written["manifests/webhook.yaml"])
    configuration = next(doc for doc in hooks if doc and doc["kind"] == "ValidatingWebhookConfiguration")
    assert [hook["name"] for hook in configuration["webhooks"]][-1] == "shelljobs.batch.tensorstack.dev"
    assert configuration["webhooks"][-1]["clientConfig"]["service"]["path"].endswith("-v1beta1-shelljob")
    assert configuration["webhooks"][-1]["rules"][0]["resources"] == ["shelljobs"]
    assert '"tensorflowtrainingjobs" "shelljobs" }}' in written["charts/genericjob-controller/templates/webhook.yaml"]
    assert "TensorFlowTrainingJob and ShellJob" in written["charts/genericjob-controller/templates/NOTES.txt"]


def test_with_a_kind_added_the_docs_need_only_make_generate(monkeypatch):
    """The docs' lists of every kind, rewritten with the new kind, pass test_docs' check (which fails on the docs
    as written, short of it), and docs/local.md gives its `kubectl logs` command (test_local_kubectl.py's)."""
    written = _script().generated([*registry.KINDS.values(), SHELLJOB])
    docs = [name for name in written if name.endswith(".md")]
    monkeypatch.setitem(registry.KINDS, "ShellJob", SHELLJOB)
    assert {name: partial_lists(written[name]) for name in docs} == {name: [] for name in docs}
    assert all(partial_lists((ROOT / name).read_text()) for name in ("docs/operations.md", "docs/security.md"))
    assert "`shelljob.batch.tensorstack.dev/name` (ShellJob)" in written["docs/local.md"]
    assert "shelljobs.batch.tensorstack.dev podgroups.scheduler.tensorstack.dev\n" in written["docs/operations.md"]


def test_the_rewritten_manifests_are_still_yaml_with_the_same_objects():
    script = _script()
    for name, text in script.generated().items():
        if name.endswith(".yaml") and "templates/" not in name:
            assert list(yaml.safe_load_all(text)) == list(yaml.safe_load_all((ROOT / name).read_text())), name
