"""The import graph: layers import only downward, no cycles, and `run` never loads the test server
or the development tools.

Layers, lowest first: apimachinery; kubeclient; informers and workqueue; controller.runtime; controller.jobs;
controller.kinds; controller.devtools; controller.cmd (and controller.__main__). localcluster is beside
the production path (a distribution of its own, packages/localcluster): it may import apimachinery only, nothing of
production imports it, and what is outside it (the devtools, tests, benchmarks, scripts) imports only its public
face (PUBLIC: the modules, and of each only the names in its `__all__`).
Inside localcluster, its sub-packages import only downward too (LOCALCLUSTER_LAYERS), and validation/ is a house of
its own there: the rest of localcluster imports only what `localcluster.validation` exports (localcluster.crd, its
door to the world, excepted). Inside controller/jobs, its rooms (JOB_ROOMS), and the pure decisions do no I/O. No
module has more than 450 lines but the generated ones (GENERATED).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs long: reads every module's imports (49 s, -n 4, loaded); a fresh interpreter

ROOT = Path(__file__).resolve().parents[2]
LAYERS = [("apimachinery",), ("kubeclient",), ("informers", "workqueue"), ("controller.runtime",), ("controller.jobs",),
          ("controller.kinds",), ("controller.devtools",), ("controller.cmd", "controller.__main__")]
PACKAGES = ("apimachinery", "kubeclient", "informers", "workqueue", "controller", "localcluster")
# Where each distribution's sources stand: the controller's at the root, the two others under packages/.
BASES = {"apimachinery": ROOT / "packages" / "apimachinery", "localcluster": ROOT / "packages" / "localcluster"}


def source(package: str) -> Path:
    """The directory of a top-level package."""
    return BASES.get(package, ROOT) / package

# localcluster's sub-packages and top-level modules, lowest first: each imports only what stands before it
# (localcluster/__init__.py, the package's face, stands above them all).
LOCALCLUSTER_LAYERS = ["validation", "errors", "storage", "fields", "auth", "admission", "discovery", "api",
                       "controllers", "kubelet", "endpoints", "cluster", "__main__", "crd", "host", "testing"]


# controller/jobs/'s rooms, lowest first: each imports only its own and those before it. kind.py and training/ (the
# seam every room reads, and the kit the kinds build on) stand apart; the package's __init__ says what it holds.
JOB_ROOMS = ["schema", "children", "decisions", "execution"]
# controller.jobs.testing, the base of the kinds' test contracts (what the model test asks a kind), stands apart too:
# it imports nothing of the engine.
JOB_SEAM = ("controller.jobs.kind", "controller.jobs.training", "controller.jobs.testing")
# What the pure decisions never import: the network, the event loop, the clients, the caches, the runtime.
IO_MODULES = ("aiohttp", "asyncio", "kubernetes_asyncio", "kubeclient", "informers",
              "workqueue", "controller.runtime", "socket", "ssl", "subprocess", "http", "urllib", "structlog",
              "prometheus_client")
MAX_LINES = 450

# localcluster's one door: the modules the rest of the repository may import, each only for the names its `__all__`
# lists (the embedding API, the tests' helpers and pytest plugin, the CRD tools, the machine's commands, the CLI).
PUBLIC = ("localcluster", "localcluster.testing", "localcluster.crd", "localcluster.host", "localcluster.__main__")
# Outside localcluster: every Python file of the repository but its own and the virtual environments'.
OUTSIDE = ("controller", "kubeclient", "informers", "workqueue", "packages/apimachinery", "tests", "bench", "scripts",
           "examples")
# Where the 450-line rule holds: every Python module of the repository, localcluster's and the tests' too...
SIZED = ("packages/apimachinery", "packages/localcluster", "kubeclient", "informers", "workqueue", "controller",
         "bench", "scripts", "tests")
# ...but the generated ones (their scripts are sized; their output is a table).
GENERATED = ("packages/localcluster/localcluster/endpoints/k8s_protobuf.py",)
# localcluster's house within the house: the door its own package is, and the module that is its door to the world.
VALIDATION = "localcluster.validation"
VALIDATION_DOOR = "localcluster.crd"


def module_of(path: Path) -> str:
    base = next((b for b in BASES.values() if path.is_relative_to(b)), ROOT)
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports() -> dict[str, set[str]]:
    """Module -> the project modules it imports (at any depth: lazy imports count too)."""
    graph: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in source(package).rglob("*.py"):
            graph[module_of(path)] = {m for m in imported(path) if m.split(".")[0] in PACKAGES and _exists(m)}
    return graph


def imported(path: Path) -> set[str]:
    """Every module name the file imports at run time, the project's or not (and, for `from a import b`, `a.b` too)."""
    module = module_of(path)
    found = set()
    package_parts = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and getattr(block.test, "id", "") == "TYPE_CHECKING" for n in ast.walk(block)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue  # for type checkers only: never imported at run time
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's own package upward
                base = ".".join(package_parts[:len(package_parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def _exists(module: str) -> bool:
    path = source(module.split(".")[0]).parent / module.replace(".", "/")
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def layer(module: str) -> int | None:
    for index, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return index
    return None


def test_every_import_runs_downward():
    upward = []
    for module, targets in imports().items():
        if module == "controller" or module.startswith("localcluster"):
            continue
        here = layer(module)
        assert here is not None, f"{module} is in no layer: add it to LAYERS"
        for target in targets:
            there = layer(target)
            tooling = module.startswith("controller.devtools")  # `local` embeds the test server; run never loads it
            if (target.startswith("localcluster") and not tooling) or (there is None and not tooling) or \
                    (there is not None and there > here):
                upward.append(f"{module} -> {target}")
    assert not upward, "imports that run upward:\n" + "\n".join(sorted(upward))


def test_informers_and_localcluster_never_import_each_other():
    graph = imports()
    crossing = [f"{m} -> {t}" for m, targets in graph.items() for t in targets
                if (m.startswith("informers") and t.startswith("localcluster"))
                or (m.startswith("localcluster") and not t.startswith(("localcluster", "apimachinery")))]
    assert not crossing, crossing


def test_no_import_cycle_between_modules():
    graph = imports()
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in graph or target == module or module.startswith(target + "."):
                continue  # a package's own __init__ re-exporting its modules is not a cycle
            if state.get(target) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*path[path.index(target):], target]))
            if target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)


def test_run_loads_neither_localcluster_nor_the_devtools():
    code = ("import sys\n"
            "from controller.cmd import cli\n"
            "from controller.runtime import manager\n"
            "args = cli.parse_args(['run', '--no-leader-elect'])\n"
            "config = cli.manager_config(args)\n"
            "unwanted = ('localcluster', 'controller.devtools', 'kubeclient.from_configuration')\n"
            "loaded = sorted(m for m in sys.modules if m.startswith(unwanted))\n"
            "assert not loaded, loaded\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          check=False)
    assert done.returncode == 0, done.stderr


def test_localcluster_sub_packages_import_only_downward():
    upward = []
    for module, targets in imports().items():
        if not module.startswith("localcluster.") or module.count(".") < 1:
            continue
        here = local_layer(module)
        assert here is not None, f"{module} is in no localcluster layer: add it to LOCALCLUSTER_LAYERS"
        for target in targets:
            there = local_layer(target)
            if there is not None and there > here:
                upward.append(f"{module} -> {target}")
    assert not upward, "localcluster imports that run upward:\n" + "\n".join(sorted(upward))


def local_layer(module: str) -> int | None:
    """Index of the localcluster layer `module` belongs to (None: the package itself, or not localcluster)."""
    for index, name in enumerate(LOCALCLUSTER_LAYERS):
        prefix = f"localcluster.{name}"
        if module == prefix or module.startswith(prefix + "."):
            return index
    return None


def job_room(module: str) -> int | None:
    """Index of the controller/jobs room `module` is in (None: the seam, or not the engine)."""
    for index, name in enumerate(JOB_ROOMS):
        prefix = f"controller.jobs.{name}"
        if module == prefix or module.startswith(prefix + "."):
            return index
    return None


def test_the_engine_rooms_import_only_downward():
    """schema (the API, the CRD, the checks, the names), children (the builders of pods, Services, the PodGroup),
    decisions (the plan and its policies), execution (the reconciler and the controller): schema and children never
    import the execution, nor the decisions the execution."""
    upward, homeless = [], []
    for module, targets in imports().items():
        if not module.startswith("controller.jobs"):
            continue
        here = job_room(module)
        if here is None:
            if module != "controller.jobs" and not any(module == s or module.startswith(s + ".") for s in JOB_SEAM):
                homeless.append(module)
            continue
        upward += [f"{module} -> {t}" for t in targets if (job_room(t) or 0) > here]
    assert not homeless, f"modules of controller/jobs in no room (JOB_ROOMS): {homeless}"
    assert not upward, "engine imports that run upward:\n" + "\n".join(sorted(upward))


def test_the_decisions_do_no_io():
    """The decisions are pure: no network, event loop, client, cache, logging or metrics: everything is passed in."""
    found = []
    for path in sorted((ROOT / "controller" / "jobs" / "decisions").rglob("*.py")):
        found += [f"{module_of(path)} -> {name}" for name in sorted(imported(path))
                  if any(name == io or name.startswith(io + ".") for io in IO_MODULES)]
    assert not found, "decisions that import I/O:\n" + "\n".join(found)


def test_no_module_over_450_lines():
    """Short modules: a file per concept, not per line count, but none past 450 lines (the generated ones
    excepted: each is a table a script of ours writes, and says so)."""
    long = [f"{path.relative_to(ROOT)}: {count}" for package in SIZED for path in sorted((ROOT / package).rglob("*.py"))
            if str(path.relative_to(ROOT)) not in GENERATED
            and (count := len(path.read_text().splitlines())) > MAX_LINES]
    assert not long, f"modules over {MAX_LINES} lines:\n" + "\n".join(long)
    not_generated = [name for name in GENERATED if "GENERATED, do not edit" not in (ROOT / name).read_text()[:500]]
    assert not not_generated, f"excused as generated, but not saying so: {not_generated}"


def past_the_validation_face(path: Path, module: str | None = None) -> list[str]:
    """The imports in a module of localcluster (`module`, the file's own name by default) of validation's modules,
    or of names `localcluster.validation` does not export."""
    module = module or module_of(path)
    exported = public_names(VALIDATION)
    package_parts = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    past = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package_parts[:len(package_parts) - node.level + 1] + ([base] if base else []))
            if base == VALIDATION:
                past += [f"{module}: from {base} import {a.name}" for a in node.names if a.name not in exported]
            elif base.startswith(VALIDATION + "."):
                past.append(f"{module}: from {base} import ...")
        elif isinstance(node, ast.Import):
            past += [f"{module}: import {a.name}" for a in node.names if a.name.startswith(VALIDATION + ".")]
    return past


def test_localcluster_reaches_validation_only_through_its_face():
    """validation/ (the built-in kinds' checks, CRD schemas, CEL and its cost) is a house of its own inside
    localcluster: the rest of it imports only what the package exports; the CRD tools go out through
    localcluster.crd, its door."""
    inside = source("localcluster")
    past = [found for path in sorted(inside.rglob("*.py"))
            if not path.is_relative_to(inside / "validation") and module_of(path) != VALIDATION_DOOR
            for found in past_the_validation_face(path)]
    assert not past, "imports past validation's face (export the name from localcluster/validation/__init__.py):\n" \
        + "\n".join(past)


def test_the_validation_face_names_what_goes_past_it(tmp_path):
    """The check above can fail: a module of validation, or a name it does not export, is named."""
    probe = tmp_path / "probe.py"
    probe.write_text("from ..validation import admit, cel_cost\n"
                     "from ..validation.schema import admit as again\n"
                     "import localcluster.validation.quantity\n")
    assert past_the_validation_face(probe, "localcluster.api.probe") == [
        "localcluster.api.probe: from localcluster.validation import cel_cost",
        "localcluster.api.probe: from localcluster.validation.schema import ...",
        "localcluster.api.probe: import localcluster.validation.quantity"]


def test_no_kind_imports_another():
    """A kind is one folder: it builds on the engine and the training kit, never on a sibling kind."""
    crossing = []
    for module, targets in imports().items():
        parts = module.split(".")
        if parts[:2] != ["controller", "kinds"] or len(parts) < 4:
            continue  # the kinds' package and their registry
        for target in targets:
            there = target.split(".")
            if there[:2] == ["controller", "kinds"] and len(there) > 2 and there[2] not in (parts[2], "registry"):
                crossing.append(f"{module} -> {target}")
    assert not crossing, crossing


def test_no_kind_name_in_the_engine():
    """The engine (controller/jobs, the training kit with it) knows kinds only through JobKind: no kind's name,
    plural or package is written in it, in code or in words."""
    from controller.kinds.registry import KINDS

    names = [word for kind in KINDS.values() for word in (kind.api.kind, kind.api.plural)]
    names += [f"controller.kinds.{type(kind).__module__.split('.')[2]}" for kind in KINDS.values()]
    found = [f"{path.relative_to(ROOT)}: {name}" for path in (ROOT / "controller" / "jobs").rglob("*.py")
             for name in names if name in path.read_text()]
    assert not found, found


def public_names(module: str) -> set[str]:
    """The names a public module of localcluster exports: its `__all__`, read from its source."""
    path = source("localcluster").parent / module.replace(".", "/")
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def past_the_door(files: list[Path], base: Path) -> list[str]:
    """The imports in `files` of localcluster's modules or names that are not PUBLIC."""
    exported = {module: public_names(module) for module in PUBLIC}
    past = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == \
                    "localcluster":
                if node.module not in PUBLIC:
                    past.append(f"{path.relative_to(base)}: from {node.module} import ...")
                    continue
                past += [f"{path.relative_to(base)}: from {node.module} import {alias.name}" for alias in node.names
                         if alias.name not in exported[node.module] and f"{node.module}.{alias.name}" not in PUBLIC]
            elif isinstance(node, ast.Import):
                past += [f"{path.relative_to(base)}: import {alias.name}" for alias in node.names
                         if alias.name.split(".")[0] == "localcluster" and alias.name not in PUBLIC]
    return past


def test_nothing_outside_localcluster_imports_past_its_door():
    """Outside localcluster, only its PUBLIC modules are imported, and of them only their `__all__`: the rest of the
    house is localcluster's own to change."""
    files = [ROOT / "conftest.py", *(path for top in OUTSIDE for path in (ROOT / top).rglob("*.py"))]
    past = past_the_door(files, ROOT)
    assert not past, "imports of localcluster's insides (add the name to a public module's __all__):\n" + \
        "\n".join(sorted(past))


def test_the_door_names_what_goes_past_it(tmp_path):
    """The check above can fail: inside modules and names not exported are named, public ones pass."""
    (tmp_path / "a.py").write_text("from localcluster.validation.schema import is_structural\n"
                                   "from localcluster import LocalCluster, cluster\n"
                                   "from localcluster.crd import is_structural\n"
                                   "import localcluster.api\n"
                                   "from localcluster import testing\n")
    assert past_the_door([tmp_path / "a.py"], tmp_path) == [
        "a.py: from localcluster.validation.schema import ...", "a.py: from localcluster import cluster",
        "a.py: import localcluster.api"]
