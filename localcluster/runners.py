"""Pod runners by name (`--runner none|scripted|process`): runner.py's two and process_runner.py's."""

from __future__ import annotations

from .api import Api
from .process_runner import ProcessRunner
from .runner import NoneRunner, ScriptedRunner


def make_runner(kind: str, api: Api, default_script: dict | list | None = None) -> NoneRunner:
    if kind == "none":
        return NoneRunner(api)
    if kind == "scripted":
        return ScriptedRunner(api, default_script)
    if kind == "process":
        return ProcessRunner(api)
    raise ValueError(f"unknown pod runner {kind!r} (expected none, scripted or process)")
