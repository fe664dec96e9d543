"""The image's venv, built as the Dockerfile builds it, measured: bytes on disk and cold-start memory.

    python bench/image_venv.py --python /usr/bin/python3.11 --out /tmp/venv-after
    python bench/image_venv.py --python /usr/bin/python3.11 --out /tmp/venv-before --no-slim

No container runtime is needed (none runs where this was written): the venv is made with the interpreter
given (the final image's is Debian 12's /usr/bin/python3.11, as debian:12-slim's python3-venv and
distroless python3-debian12 have it), from requirements.lock with its hashes, then the project's wheel
from the files the Dockerfile copies, then `pip check`, then what the builder deletes (scripts/slim_venv.py
unless --no-slim, pip and setuptools). Reported: `du -sb` of the venv, and the peak RSS of
`genericjob-controller run --help` and of importing the run path (BENCHMARKS.md, "The image").
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The Dockerfile's COPY sources, less what .dockerignore keeps out of the context.
SOURCES = ("pyproject.toml", "README.md", "apimachinery", "kubeclient", "informers", "workqueue", "controller")
KEPT_OUT = shutil.ignore_patterns("__pycache__", "*.pyc", "devtools")
RUN_PATH = ("from controller.cmd import cli\nfrom controller.runtime import manager\n"
            "from controller.kinds import registry\n"
            "cli.manager_config(cli.parse_args(['run', '--no-leader-elect']))\n")


def run(*argv: str | Path, cwd: Path | None = None) -> None:
    subprocess.run([str(a) for a in argv], check=True, cwd=cwd)


def build(python: str, out: Path, slim: bool) -> None:
    shutil.rmtree(out, ignore_errors=True)
    run(python, "-m", "venv", out)
    pip = out / "bin" / "pip"
    run(pip, "install", "-q", "--no-cache-dir", "--require-hashes", "--no-deps", "-r", ROOT / "requirements.lock")
    with tempfile.TemporaryDirectory() as tmp:
        context = Path(tmp) / "src"
        for source in SOURCES:
            if (ROOT / source).is_dir():
                shutil.copytree(ROOT / source, context / source, ignore=KEPT_OUT)
            else:
                context.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / source, context / source)
        run(pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "--wheel-dir", Path(tmp) / "wheels", ".",
            cwd=context)
        run(pip, "install", "-q", "--no-deps", *sorted((Path(tmp) / "wheels").glob("*.whl")))
    run(pip, "check")
    (out / "bin" / "localcluster").unlink(missing_ok=True)
    if slim:
        [site] = (out / "lib").glob("python3.*/site-packages")
        run(out / "bin" / "python", ROOT / "scripts" / "slim_venv.py", site)
    run(pip, "uninstall", "-q", "--yes", "pip", "setuptools")


def peak_rss_mib(*argv: str | Path) -> float:
    """The peak RSS of one child process (each measured in a fresh interpreter of this script's)."""
    code = ("import resource, subprocess, sys\n"
            "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, cwd='/')\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    done = subprocess.run([sys.executable, "-c", code, *map(str, argv)], check=True, capture_output=True, text=True)
    return int(done.stdout) / 1024


def measure(out: Path) -> dict:
    size = int(subprocess.run(["du", "-sb", str(out)], check=True, capture_output=True, text=True).stdout.split()[0])
    [site] = (out / "lib").glob("python3.*/site-packages")
    kubernetes = int(subprocess.run(["du", "-sb", str(site / "kubernetes_asyncio")], check=True,
                                    capture_output=True, text=True).stdout.split()[0])
    return {"venv_bytes": size, "kubernetes_asyncio_bytes": kubernetes,
            "run_help_peak_rss_mib": round(min(peak_rss_mib(out / "bin" / "genericjob-controller", "run", "--help")
                                               for _ in range(3)), 1),
            "run_path_import_peak_rss_mib": round(min(peak_rss_mib(out / "bin" / "python", "-c", RUN_PATH)
                                                      for _ in range(3)), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default="/usr/bin/python3.11", help="the interpreter the venv is made with")
    parser.add_argument("--out", type=Path, required=True, help="where the venv is built (replaced)")
    parser.add_argument("--no-slim", action="store_true", help="as the image was before scripts/slim_venv.py")
    parser.add_argument("--measure-only", action="store_true", help="measure --out as it is")
    args = parser.parse_args()
    if not args.measure_only:
        build(args.python, args.out, slim=not args.no_slim)
    print(json.dumps({"venv": str(args.out), "slim": not args.no_slim, **measure(args.out)}))


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    main()
