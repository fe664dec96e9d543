"""Bad input through the real kubectl: every file of tests/chaos/corpus/ says on its first line what
must happen to it, `# expect: rejected FIELD` (kubectl apply fails, its stderr naming the field),
`# expect: invalid FIELD` (accepted, then Failed with InvalidSpec naming the field and a Warning
Event, no pods), `# expect: yaml` (kubectl cannot parse it). An oversized object gets the
apiserver's 413. The valid job submitted alongside succeeds and the controller stays healthy."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from localcluster.testing import MAX_REQUEST_BYTES, Kubectl
from tests.e2e.conftest import condition, until
from tests.slow import starts_processes

CORPUS = Path(__file__).parent / "corpus"
FILES = sorted(p.name for p in CORPUS.glob("*.yaml") if p.name != "valid.yaml")


def expectation(path: Path) -> tuple[str, str]:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect: "), path
    kind, _, field = first.removeprefix("# expect: ").partition(" ")
    return kind, field


@pytest.fixture
@starts_processes
def kubectl(cluster, tmp_path) -> Kubectl:
    return Kubectl(cluster, tmp_path)


@pytest.mark.parametrize("name", FILES)
async def test_corpus_file_is_rejected_or_fails_naming_the_field(cluster, controller, jobs, kubectl, name):
    path = CORPUS / name
    kind, field = expectation(path)
    result = await kubectl.run("apply", "-f", str(path))
    await kubectl.ok("apply", "-f", str(CORPUS / "valid.yaml"))
    if kind == "rejected":
        assert result.code != 0 and field in result.err, result.err
        assert "is invalid" in result.err or "unknown field" in result.err, result.err
    elif kind == "yaml":
        assert result.code != 0 and "yaml" in result.err.lower(), result.err
    else:
        assert kind == "invalid" and result.code == 0, result.err
        job_name = yaml.safe_load(path.read_text())["metadata"]["name"]
        done = await jobs.wait_phase(job_name, "Failed")
        failed = condition(done, "Failed")
        assert failed["reason"] == "InvalidSpec" and field in failed["message"], failed
        [event] = await jobs.wait_event(job_name, "InvalidSpec")
        assert event.type == "Warning" and field in event.message
        assert await jobs.pods(job_name) == []
        described = await kubectl.ok("describe", "genericjob", job_name)
        assert "InvalidSpec" in described.out
    await jobs.wait_phase("valid", "Succeeded")
    assert controller.healthy()


async def test_an_oversized_object_gets_413(cluster, controller, jobs, kubectl, tmp_path):
    job = yaml.safe_load((CORPUS / "valid.yaml").read_text())
    job["metadata"] = {"name": "oversized", "annotations": {"blob": "x" * MAX_REQUEST_BYTES}}
    big = tmp_path / "oversized.yaml"
    big.write_text(yaml.safe_dump(job))
    result = await kubectl.run("create", "-f", str(big))
    assert result.code != 0 and "Request entity too large" in result.err, result.err
    await kubectl.ok("apply", "-f", str(CORPUS / "valid.yaml"))
    await jobs.wait_phase("valid", "Succeeded")
    assert controller.healthy()


async def test_the_whole_corpus_at_once_leaves_the_controller_reconciling(cluster, controller, jobs, kubectl):
    for name in FILES:
        await kubectl.run("apply", "-f", str(CORPUS / name))
    await kubectl.ok("apply", "-f", str(CORPUS / "valid.yaml"))
    await jobs.wait_phase("valid", "Succeeded")
    invalid = [yaml.safe_load((CORPUS / n).read_text())["metadata"]["name"] for n in FILES
               if expectation(CORPUS / n)[0] == "invalid"]

    async def all_failed():
        found = [condition(await jobs.get(n), "Failed") for n in invalid]
        return all(c is not None and c["reason"] == "InvalidSpec" for c in found)

    await until(all_failed, what="every invalid job Failed")
    assert controller.healthy()
