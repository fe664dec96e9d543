"""The documentation's commands, run as written: a newcomer follows them line by line.

Every ```sh block of README.md and then of the pages of docs/ (PAGES, in reading order: the README's Quick
start leaves `local` running for the user guide) runs here, from the repository's root, except the blocks and
lines listed in NOT_RUN_BLOCKS and NOT_RUN_LINES, each with the reason (a real cluster, this suite itself,
minutes of benchmark). The README's Quick start has two terminals; so has the test:

- a block that starts a server (`genericjob-controller local` without `--apply`, `localcluster serve`)
  runs in the background, as in a terminal of its own, until the blocks that use it have run, then gets
  Ctrl-C (SIGINT) and must exit 0;
- a block that sets KUBECONFIG runs against the last server started: its `$PWD/.cache/...` path is
  replaced by the kubeconfig that server wrote (`local` may have found 6443 taken; a test must not
  overwrite a file of the developer's);
- any other block runs to its end and must exit 0.

The blocks run in parts (Part), each a test, side by side: a server's block with the blocks that use it, in
reading order (the Quick start's server serves the user guide's kubectl too); every other block alone.
test_the_parts_run_every_block_once_in_reading_order checks that none is left out.

Substituted, and only this: `localcluster serve`'s `--kubeconfig-out` (a temporary file), and kubectl's
discovery cache (a temporary directory, so that no port another test used answers from a stale cache).
A ```yaml example of docs/ is applied by the test YAML_TESTED names. The commands for a real cluster that
cannot run here are checked against what they act on (the uninstall's CRDs and selectors).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from dataclasses import dataclass
from pathlib import Path

import pytest

from .subprocesses import ROOT, LocalProcess

README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = (README, DOCS / "user-guide.md", DOCS / "local.md", DOCS / "operations.md", DOCS / "development.md")
YAML_TESTED = {  # a page with ```yaml examples -> the test that applies them
    DOCS / "security.md": ROOT / "tests" / "program" / "test_admission_policy.py",
    DOCS / "operations.md": ROOT / "tests" / "program" / "test_install_webhook.py",  # the failurePolicy overlay
}
NOT_RUN_BLOCKS = {  # a text found in exactly one block -> why that block is not run here
    "rollout status deployment/genericjob-controller":
        "installs the controller into a real cluster: its Deployment needs a kubelet to pull the image and run it "
        "(tests/program/test_manifests.py applies the same manifests to localcluster)",
    "helm install genericjob-controller":
        "installs the Helm release into a real cluster (tests/program/test_helm_chart.py renders the chart)",
    "kubectl create clusterrolebinding genericjob-metrics-prometheus":
        "grants a real cluster's Prometheus (ServiceAccount monitoring/prometheus-k8s) the right to scrape",
    "helm upgrade genericjob-controller":
        "upgrades an installed release in a real cluster",
    "helm uninstall genericjob-controller":
        "removes an installed release from a real cluster",
    "bench/bench_localcluster.py --pods 10000":
        "the benchmarks take minutes each (make bench); they are not tests",
    "make image IMAGE=":
        "builds and pushes the image with docker, which the test machine may not have "
        "(tests/program/test_supply_chain.py runs `make --dry-run image`)",
    "kind load docker-image registry":
        "loads the image into a kind cluster's nodes",
    "kubectl create namespace team-a":
        "installs the namespaced variant into a real cluster (tests/program/test_packaging.py applies it to "
        "localcluster)",
    "kubectl delete crd genericjobs":
        "deletes a real cluster's CRDs (test_the_uninstall_deletes_every_crd checks it names them all)",
}
NOT_RUN_LINES = {  # a command, as written (without its comment) -> why it is not run here
    "make test": "it is this test suite (CI's command): it would run this test again",
}
SERVERS = {  # how a server command says it is ready
    r"genericjob-controller local\s*$": r"^ready: ",
    r"-m localcluster serve ": r"^localcluster listening on ",
}


@dataclass
class Block:
    text: str
    page: Path = README
    number: int = 0  # its place among the page's shell blocks, from 1
    line: int = 0  # one command of a block, run apart (Part): its place among the block's commands, from 1

    @property
    def place(self) -> tuple[int, int, int]:
        """Where it is read: page, block, command."""
        return PAGES.index(self.page), self.number, self.line

    @property
    def commands(self) -> list[str]:
        """The block's commands: comments and blank lines out, continuation lines joined."""
        joined = re.sub(r"\\\n\s*", " ", self.text)
        return [command(line) for line in joined.splitlines() if command(line)]

    @property
    def script(self) -> str:
        """The block without the lines NOT_RUN_LINES names."""
        return "".join(line for line in self.text.splitlines(keepends=True) if command(line) not in NOT_RUN_LINES)


def command(line: str) -> str:
    """The line without its comment."""
    return "" if line.lstrip().startswith("#") else line.split(" #")[0].strip()


def fenced(page: Path, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", page.read_text(), re.MULTILINE | re.DOTALL)


def blocks() -> list[Block]:
    """Every shell block of the pages, in reading order."""
    return [Block(text, page, number) for page in PAGES for number, text in enumerate(fenced(page, "sh"), 1)]


def test_every_page_with_commands_or_examples_is_run():
    """A page of docs/ with a shell block is in PAGES, one with a YAML example in YAML_TESTED, whose test reads it:
    moving text between pages keeps it tested."""
    for page in (README, *sorted(DOCS.glob("*.md"))):
        if fenced(page, "sh"):
            assert page in PAGES, f"{page.name} has shell blocks: add it to PAGES"
        if fenced(page, "yaml") or fenced(page, "yml"):
            assert page in YAML_TESTED, f"{page.name} has YAML examples: name the test that applies them"
            assert page.name in YAML_TESTED[page].read_text(), (page.name, YAML_TESTED[page].name)


def not_run_reason(block: Block) -> str | None:
    reasons = [reason for marker, reason in NOT_RUN_BLOCKS.items() if marker in block.text]
    return reasons[0] if reasons else None


def test_the_lists_of_what_is_not_run_name_real_blocks():
    """An entry that matches nothing (the documentation changed) or several blocks says nothing useful."""
    found = blocks()
    for marker in NOT_RUN_BLOCKS:
        assert sum(marker in block.text for block in found) == 1, marker
    for line in NOT_RUN_LINES:
        assert sum(line in block.commands for block in found) == 1, line
    runnable = [b for b in found if not_run_reason(b) is None]
    assert any("genericjob-controller local" in " ".join(b.commands) for b in runnable)
    assert any("kubectl" in " ".join(b.commands) for b in runnable)


def run_commands(block: Block) -> list[str]:
    """The block's commands that are run: without NOT_RUN_LINES'."""
    return [c for c in block.commands if c not in NOT_RUN_LINES]


def runnable() -> list[Block]:
    """The blocks that are run, in reading order: not NOT_RUN_BLOCKS', not empty without NOT_RUN_LINES'."""
    return [block for block in blocks() if not not_run_reason(block) and run_commands(block)]


def server_ready(block: Block) -> str | None:
    """What the block's server prints once ready, when the block starts a server."""
    first = run_commands(block)[0]
    return next((ready for pattern, ready in SERVERS.items() if re.search(pattern, first)), None)


# A command that runs a cluster, applies its files and exits when their jobs have finished: it depends on no
# command before it and leaves nothing behind for the next (its own cluster, port, kubeconfig and pod addresses).
RUN_TO_END = r"genericjob-controller local .*--apply "


def apart(block: Block) -> list[Block]:
    """A block whose commands are each a RUN_TO_END alone on its line: each command, a block of its own; any other
    block, whole."""
    lines = [line for line in block.text.splitlines() if command(line) and command(line) not in NOT_RUN_LINES]
    if len(lines) > 1 and "\\\n" not in block.text and all(re.search(RUN_TO_END, command(line)) for line in lines):
        return [Block(line + "\n", block.page, block.number, number) for number, line in enumerate(lines, 1)]
    return [block]


@dataclass
class Part:
    """Blocks run together, in reading order, as one test: a server's block with every block that sets KUBECONFIG
    (and so runs against the last server started) up to the next server's; any other block alone, or each of its
    commands alone when they are RUN_TO_END's (apart). The parts are independent (each `local` finds its own port,
    each test has its own temporary files) and run side by side."""

    blocks: list[Block]

    @property
    def name(self) -> str:
        """Its first block's page and place among the page's shell blocks (and command's in the block)."""
        first = self.blocks[0]
        return f"{first.page.stem}-{first.number}" + (f".{first.line}" if first.line else "")

    @property
    def commands(self) -> list[str]:
        return [c for block in self.blocks for c in run_commands(block)]


def parts() -> list[Part]:
    found: list[Part] = []
    server: Part | None = None
    for block in runnable():
        if "KUBECONFIG=" in block.script and not server_ready(block):
            assert server is not None, f"no server for: {block.text}"
            server.blocks.append(block)
            continue
        found.extend(Part([alone]) for alone in apart(block))
        if server_ready(block):
            server = found[-1]
    return found


def test_the_parts_run_every_block_once_in_reading_order():
    """Every command of every block that is run is in exactly one part, in reading order within it; a block setting
    KUBECONFIG is in the part of the last server started before it (the Quick start's server serves the user
    guide's kubectl too); any other block is alone, or each of its commands when they are RUN_TO_END's; what the
    Quick start promises is among them."""
    order = runnable()
    found = parts()
    every = sorted(((block.place, c) for part in found for block in part.blocks for c in run_commands(block)),
                   key=lambda placed: placed[0])  # stable: a block's commands stay in its order
    assert [c for _, c in every] == [c for block in order for c in run_commands(block)]
    servers = [block.place for block in order if server_ready(block)]
    for part in found:
        places = [block.place for block in part.blocks]
        assert places == sorted(places), part.name
        if server_ready(part.blocks[0]):
            for block in part.blocks[1:]:
                assert "KUBECONFIG=" in block.script and not server_ready(block), (part.name, block.text)
                assert max(s for s in servers if s < block.place) == places[0], (part.name, block.text)
        else:
            [block] = part.blocks
            assert "KUBECONFIG=" not in block.script, part.name
            assert not block.line or re.search(RUN_TO_END, block.text), part.name
    assert len({part.name for part in found}) == len(found)
    ran = [command for part in found for command in part.commands]
    for wanted in ("make local", ".venv/bin/genericjob-controller local",
                   ".venv/bin/kubectl apply -f examples/restart-on-failure.yaml",
                   ".venv/bin/genericjob-controller local --logs --apply examples/tensorflow-multi-worker.yaml",
                   ".venv/bin/kubectl run demo --image=busybox --restart=Never -- sleep 1"):
        assert wanted in ran, ran


@pytest.mark.slow  # runs the documentation's commands
@pytest.mark.timeout(600)
@pytest.mark.parametrize("part", parts(), ids=lambda part: part.name)
async def test_the_readmes_commands_work_as_written(part, tmp_path):
    env = {**os.environ, "KUBECACHEDIR": str(tmp_path / "kubectl-cache"), "KUBERC": "off",
           "TMPDIR": str(tmp_path)}  # the pods' $TMPDIR (the restart example's marker)
    server: LocalProcess | None = None
    kubeconfig: Path | None = None
    ran: list[str] = []
    try:
        for index, block in enumerate(part.blocks):
            commands = run_commands(block)
            ready = server_ready(block)
            if ready:
                assert len(commands) == 1, f"a server's block holds only the server: {block.text}"
                assert server is None, f"one server a part: {block.text}"
                serve, kubeconfig = _server_command(commands[0], tmp_path / f"kubeconfig-{index}")
                server = await LocalProcess(ROOT, argv=["bash", "-c", f"exec {serve}"], env=env,
                                            ready=ready).__aenter__()
                kubeconfig = kubeconfig or server.kubeconfig
            else:
                script = block.script
                if "KUBECONFIG=" in script:
                    assert server is not None and kubeconfig is not None, f"no server for: {block.text}"
                    script = re.sub(r"\$PWD/\.cache/\S+", str(kubeconfig), script)
                done = await _run(script, env)
                assert done[0] == 0, f"{block.page.name} block failed (exit {done[0]}):\n{block.text}\n{done[1]}"
            ran.extend(commands)
        if server is not None:
            await _stop(server)
            server = None
    finally:
        if server is not None:
            await server.__aexit__(None, None, None)
    assert ran == part.commands  # every command of every block of the part


def _server_command(command: str, kubeconfig: Path) -> tuple[str, Path | None]:
    """The command with its --kubeconfig-out replaced by a temporary file (then returned); `local` without one
    writes its own, named in what it prints."""
    if "--kubeconfig-out" not in command:
        return command, None
    return re.sub(r"--kubeconfig-out \S+", f"--kubeconfig-out {kubeconfig}", command), kubeconfig


async def _run(script: str, env: dict[str, str]) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        "bash", "-e", "-c", script, cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT)
    async with asyncio.timeout(180):
        out, _ = await process.communicate()
    return process.returncode, out.decode(errors="replace")


async def _stop(server: LocalProcess) -> None:
    """Ctrl-C, as the README says."""
    own = _read(server.kubeconfig) if any("export KUBECONFIG=" in line for line in server.lines) else None
    code = await server.stop(signal.SIGINT)
    output = "\n".join(server.lines) + server.err.decode(errors="replace")
    assert code == 0, output
    if any("restart-on-failure" in line for line in server.lines):  # the Quick start's server
        assert any(re.search(r"finished: restart-on-failure\s+Succeeded", line) for line in server.lines), output
        # Its own kubeconfig, gone with it (a `local` run beside this test may since have taken its port, and so
        # written a kubeconfig of its own at that path).
        assert own is not None and _read(server.kubeconfig) != own


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
