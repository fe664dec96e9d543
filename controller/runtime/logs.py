"""Logging: structlog for our lines and the standard library's (informers, aiohttp), one format for both.

JSON lines in a cluster, where a log pipeline parses them; a readable console format on a laptop.
Our structlog lines go straight to the stream (structlog's own filtering logger and a line writer),
not through the standard library's Logger, LogRecord and Handler: that route cost ~27 us a line,
this ~13 us, and the reconciler logs every phase change. The standard library's lines still go
through its handler, rendered by the same processors.
Context bound with `structlog.contextvars` (a worker binds the job key and a reconcile id) is
added to every line, stdlib ones included. A redacting processor runs last before rendering, so
no path can log a token: values under keys that look like credentials are replaced, and bearer
tokens are cut out of any string. Other libraries' loggers have a level of their own (warning by
default): at debug, the CEL library alone would print a hundred lines a job.
"""

from __future__ import annotations

import functools
import logging
import re
import sys
import threading
from typing import Any, TextIO

import orjson
import structlog

LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("json", "console")
REDACTED = "[REDACTED]"

_SENSITIVE_KEY = re.compile(r"token|password|passwd|secret|authorization|api[-_]?key|credential|cookie", re.I)
# Credentials are long: "a bearer of news" stays as it is.
_CREDENTIAL_IN_TEXT = re.compile(r"\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}", re.I)
# Libraries that would log request or response details (bodies, headers) at debug level.
_QUIET = {"kubernetes_asyncio": logging.WARNING, "aiohttp.access": logging.WARNING, "asyncio": logging.WARNING}
# The program's own loggers (by top-level name); the level asked for applies to these, `deps_level` to the rest.
OWN_LOGGERS = ("apimachinery", "informers", "workqueue", "controller", "leader", "localcluster")


def redact(value: Any) -> Any:
    """A copy of `value` with credential-like keys' values and bearer/basic credentials replaced."""
    if isinstance(value, dict):
        return {k: REDACTED if isinstance(k, str) and _sensitive_key(k) else redact(v)
                for k, v in value.items()}
    if type(value) in _PLAIN:  # (most values of a line: nothing in them to redact)
        return value
    if isinstance(value, list | tuple):
        return type(value)(redact(v) for v in value)
    if isinstance(value, str) and _CREDENTIAL_IN_TEXT.search(value):
        return _CREDENTIAL_IN_TEXT.sub(lambda m: f"{m.group(1)} {REDACTED}", value)
    return value


_PLAIN = frozenset({int, float, bool, type(None)})


@functools.lru_cache(maxsize=1024)
def _sensitive_key(key: str) -> bool:
    """Does this key look like a credential's? Remembered: a line's keys are the same few, line after line."""
    return _SENSITIVE_KEY.search(key) is not None


def redact_secrets(_logger: Any, _method: str, event_dict: dict) -> dict:
    return redact(event_dict)


def _render_json(event_dict: dict, **_kwargs: Any) -> str:
    return orjson.dumps(event_dict, default=str, option=orjson.OPT_NON_STR_KEYS).decode()


class LineWriter:
    """structlog's logger for our lines: writes each rendered line to the stream, under the lock the
    standard library's handler holds, so the two kinds of line never interleave."""

    def __init__(self, stream: TextIO, lock: threading.RLock, name: str = "") -> None:
        self.name = name  # read by structlog.stdlib.add_logger_name
        self._stream = stream
        self._lock = lock

    def msg(self, message: str) -> None:
        with self._lock:
            self._stream.write(message + "\n")
            self._stream.flush()

    log = debug = info = warn = warning = error = critical = exception = fatal = failure = err = msg


def configure(level: str = "info", fmt: str = "console", stream: TextIO | None = None,
              deps_level: str = "warning") -> None:
    """Route structlog and stdlib logging to `stream` (stderr by default) in `fmt`: the program's loggers
    from `level` up, other libraries' from `deps_level` (and `level`) up."""
    stream = stream or sys.stderr
    shared: list = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if fmt == "json":
        # Plain tracebacks, never with frame locals: a local may hold a request's headers.
        renderer: list = [structlog.processors.format_exc_info, redact_secrets,
                          structlog.processors.JSONRenderer(serializer=_render_json)]
    else:
        renderer = [structlog.processors.format_exc_info, redact_secrets,
                    structlog.dev.ConsoleRenderer(colors=stream.isatty())]
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.ExtraAdder()],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *renderer])
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    lock = handler.lock
    assert lock is not None  # made by Handler.__init__ (createLock); typeshed allows None before that
    own = logging.getLevelName(level.upper())
    structlog.configure(
        processors=[*shared, structlog.stdlib.PositionalArgumentsFormatter(), structlog.processors.StackInfoRenderer(),
                    *renderer],
        logger_factory=lambda name="", *_args: LineWriter(stream, lock, name),
        wrapper_class=structlog.make_filtering_bound_logger(own),
        # Not cached: tests and `local` may configure more than once in one process.
        cache_logger_on_first_use=False,
    )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    deps = logging.getLevelName(deps_level.upper())
    root.setLevel(max(own, deps))
    for name in OWN_LOGGERS:
        logging.getLogger(name).setLevel(own)
    for name, quiet in _QUIET.items():
        logging.getLogger(name).setLevel(max(quiet, own, deps))


__all__ = ["FORMATS", "LEVELS", "OWN_LOGGERS", "REDACTED", "LineWriter", "configure", "redact", "redact_secrets"]
