"""Logging: JSON and console formats, stdlib loggers routed through structlog, credentials redacted."""

from __future__ import annotations

import io
import json
import logging

import pytest
import structlog

from controller.runtime import logs

TOKEN = "eyJhbGciOiJSUzI1NiIsImtpZCI6InNlY3JldCJ9.payload.signature"


@pytest.fixture
def restore_logging():
    """configure() changes process-wide state: put back what other tests expect."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    quiet = {name: logging.getLogger(name).level
             for name in ("kubernetes_asyncio", "aiohttp.access", "asyncio", *logs.OWN_LOGGERS)}
    yield
    structlog.reset_defaults()
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, old in quiet.items():
        logging.getLogger(name).setLevel(old)


def lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_json_lines_with_context_from_structlog_and_stdlib(restore_logging):
    stream = io.StringIO()
    logs.configure("info", "json", stream)
    with structlog.contextvars.bound_contextvars(job="default/train", reconcile_id="abc123"):
        structlog.get_logger("controller.jobs.execution.reconciler").info("status written", phase="Running")
        logging.getLogger("informers.informer").warning("informer for %s crashed", "pods")
    structlog.get_logger("x").debug("not shown at info")
    first, second = lines(stream)
    assert first["event"] == "status written" and first["phase"] == "Running" and first["level"] == "info"
    assert first["logger"] == "controller.jobs.execution.reconciler" and first["timestamp"].endswith("Z")
    assert (first["job"], first["reconcile_id"]) == ("default/train", "abc123")
    assert second["event"] == "informer for pods crashed" and second["level"] == "warning"
    assert (second["job"], second["reconcile_id"]) == ("default/train", "abc123")


def test_console_format_is_readable(restore_logging):
    stream = io.StringIO()
    logs.configure("debug", "console", stream)
    structlog.get_logger("controller").debug("reconciled", job="default/train", result="success")
    text = stream.getvalue()
    assert "reconciled" in text and "job=default/train" in text and not text.startswith("{")


@pytest.mark.parametrize("fmt", ["json", "console"])
def test_credentials_are_never_logged(restore_logging, fmt):
    stream = io.StringIO()
    logs.configure("debug", fmt, stream)
    log = structlog.get_logger("controller")
    log.info("request", token=TOKEN, headers={"Authorization": f"Bearer {TOKEN}", "Accept": "application/json"},
             env=[{"name": "DB_PASSWORD", "value": "x"}, {"password": TOKEN}], client_secret=TOKEN, apiKey=TOKEN)
    log.warning(f"request failed with Authorization: Bearer {TOKEN}")
    logging.getLogger("aiohttp.client").error("sent header Authorization: Basic %s", TOKEN)
    try:
        raise RuntimeError(f"bad credentials: bearer {TOKEN}")
    except RuntimeError:
        log.exception("failed")
    text = stream.getvalue()
    assert TOKEN not in text
    assert logs.REDACTED in text and "application/json" in text and "DB_PASSWORD" in text


def test_redact_keeps_ordinary_values():
    value = {"job": "default/x", "nested": {"secretName": "s", "items": [1, "two"]}, "note": "a bearer of news"}
    assert logs.redact(value) == {"job": "default/x", "nested": {"secretName": logs.REDACTED, "items": [1, "two"]},
                                  "note": "a bearer of news"}
    assert logs.redact("Authorization: Bearer abc.def.ghi") == f"Authorization: Bearer {logs.REDACTED}"


@pytest.mark.parametrize(("deps", "shown"), [("warning", False), ("debug", True)])
def test_other_libraries_log_from_their_own_level(restore_logging, deps, shown):
    """At debug, the program's lines; a library's (the CEL library's, say) only when asked."""
    stream = io.StringIO()
    logs.configure("debug", "json", stream, deps_level=deps)
    structlog.get_logger("controller.jobs").debug("ours")
    logging.getLogger("informers.reflector").debug("ours too")
    logging.getLogger("celpy.evaluation").debug("theirs")
    logging.getLogger("celpy.evaluation").warning("theirs, a warning")
    events = [line["event"] for line in lines(stream)]
    assert events == ["ours", "ours too", *(["theirs"] if shown else []), "theirs, a warning"]
