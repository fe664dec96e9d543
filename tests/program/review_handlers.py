"""Admission handlers for the webhook server's tests, in a module of their own: a costly review runs its handler in a
worker process, which imports the handler's module (a small one, quick to import)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from controller.runtime.costly_reviews import BadRequest


def endless(body: dict) -> dict:
    """A review that never ends: it writes its process's pid where the body says first."""
    Path(body["pid_file"]).write_text(str(os.getpid()))
    while True:
        time.sleep(0.05)


def broken(body: dict) -> dict:
    raise KeyError("bug")


def bad(body: dict) -> dict:
    raise BadRequest("no")
