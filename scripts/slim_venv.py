"""Remove from the image's venv what `genericjob-controller run` never loads (the Dockerfile's builder runs it).

    python3 scripts/slim_venv.py [--no-strip] /opt/venv/lib/python3.11/site-packages

- kubernetes_asyncio's generated API classes (`client/api`, ~27 MB with their bytecode) and models
  (`client/models`, ~16 MB): the controller reads and writes raw JSON through `ApiClient` and loads its
  configuration through `kubernetes_asyncio.config`; apimachinery/kubeclient.py imports those without
  running the package `__init__`s that would import every generated class. `client/models` stays a
  package (api_client.py names it in an import statement, which the deferred package satisfies), its
  `__init__` replaced by one that says why a model cannot be loaded here.
- kubernetes_asyncio's own tests (`*_test.py`, `e2e_test/`).
- The sources and stubs compiled extensions ship beside their binaries (`.pyx`, `.pxd`, `.pxi`, `.c`,
  `.pyi`; `.h` except cffi's, which it reads to compile at run time): never imported.
- The extensions' symbol tables and debug sections (`strip --strip-unneeded`, binutils): the wheels ship
  them unstripped (uvloop's loop.so 13.6 MB, 1.6 MB stripped; 47 MB of extensions become 21 MB). What
  the dynamic loader and Python need (.dynsym, PyInit_*) stays; tracebacks of Python code are unchanged,
  only a native debugger or profiler would miss the names.

Nothing the `run` path imports is removed: tests/program/test_image_venv.py runs the run path and a
controller against a copy of kubernetes_asyncio slimmed by this script. Prints what it removed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

GENERATED = ("kubernetes_asyncio/client/api", "kubernetes_asyncio/client/models")
TESTS = ("kubernetes_asyncio/e2e_test",)
SOURCE_SUFFIXES = {".pyx", ".pxd", ".pxi", ".c", ".pyi"}
MODELS_INIT = '''"""Removed from this image (scripts/slim_venv.py): the controller uses no generated model class."""

raise ImportError("kubernetes_asyncio's generated models are not in the genericjob-controller image "
                  "(scripts/slim_venv.py); the controller reads and writes raw JSON")
'''


def size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def removable_files(site: Path) -> list[Path]:
    tests = list((site / "kubernetes_asyncio").rglob("*_test.py"))
    found = tests + [c for t in tests for c in (t.parent / "__pycache__").glob(f"{t.stem}.*.pyc")]
    for path in site.rglob("*"):
        if not path.is_file():
            continue
        if path.suffix in SOURCE_SUFFIXES or (path.suffix == ".h" and path.relative_to(site).parts[0] != "cffi"):
            found.append(path)
    return found


def strip_extensions(site: Path) -> int:
    """Strip every extension module and shared library in `site`; the bytes saved."""
    libraries = sorted(p for p in site.rglob("*.so*") if p.is_file() and not p.is_symlink())
    before = sum(p.stat().st_size for p in libraries)
    if libraries:
        subprocess.run(["strip", "--strip-unneeded", *map(str, libraries)], check=True)
    saved = before - sum(p.stat().st_size for p in libraries)
    print(f"stripped {len(libraries)} shared objects: {before / 1e6:.1f} MB -> {(before - saved) / 1e6:.1f} MB")
    return saved


def slim(site: Path, strip: bool = True) -> int:
    """Remove; the bytes removed."""
    if not (site / "kubernetes_asyncio" / "client" / "api_client.py").is_file():
        raise SystemExit(f"{site}: no kubernetes_asyncio here; give the venv's site-packages")
    removed = 0
    for relative in (*GENERATED, *TESTS):
        path = site / relative
        if path.is_dir():
            removed += size(path)
            shutil.rmtree(path)
            print(f"removed {relative}/")
    models = site / "kubernetes_asyncio" / "client" / "models"
    models.mkdir()
    (models / "__init__.py").write_text(MODELS_INIT)
    files = removable_files(site)
    for path in files:
        removed += size(path)
        path.unlink()
    print(f"removed {len(files)} test, source and stub files; {removed / 1e6:.1f} MB in all")
    return removed + (strip_extensions(site) if strip else 0)


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != "--no-strip"]
    if len(arguments) != 1:
        raise SystemExit(__doc__)
    slim(Path(arguments[0]), strip="--no-strip" not in sys.argv)
