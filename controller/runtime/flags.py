"""Flag types and help shared by the program's commands (`run` in controller/cmd, `local` in controller/devtools).

Booleans are spelt as Go controllers spell them, since manifests written for those pass them so:
`--flag`, `--flag=true`, `--flag=false` (also 1/0, yes/no, on/off), and `--no-flag` where a flag
offers it. Each help line states its default once: the formatter appends `(default: X)` unless
the text already says what the default is.
"""

from __future__ import annotations

import argparse
import errno
import os
import socket

from controller.runtime.logs import LEVELS

TRUE, FALSE = frozenset({"1", "true", "yes", "on"}), frozenset({"0", "false", "no", "off"})


def boolean(text: str) -> bool:
    word = text.strip().lower()
    if word not in TRUE | FALSE:
        raise ValueError(text)
    return word in TRUE


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0:  # also rejects nan
        raise ValueError(text)
    return value


def port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise ValueError(text)
    return value


def bind_error(host: str, port_number: int, exc: OSError, flag: str = "--port") -> str:
    """Why `local` cannot serve on host:port (its API on --port, its webhook on --webhook-port), and which flag to
    change: a port taken is said in the same words for both flags, so a user who met one knows the other."""
    if exc.errno == errno.EADDRINUSE:
        return f"port {port_number} on {host} is in use: choose another {flag} (0 picks a free one)"
    # aiohttp's message repeats the address; the system's own words are shorter.
    reason = os.strerror(exc.errno) if not isinstance(exc, socket.gaierror) and exc.errno else exc.strerror or exc
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return f"cannot serve on {host}: {reason} (--host must be a name or address of this machine)"
    if exc.errno == errno.EACCES:
        return f"cannot serve on port {port_number}: {reason} (ports below 1024 need privileges)"
    return f"cannot serve on {host}:{port_number}: {reason}"


# argparse names a failed conversion after the type function: "invalid port value: '70000'".
boolean.__name__ = "boolean (true or false)"
positive_int.__name__ = "positive integer"
non_negative.__name__ = "non-negative number"
port.__name__ = "port (0 to 65535)"


def add_log_level_deps(parser: argparse.ArgumentParser) -> None:
    """`--log-level-deps`: other libraries' loggers have a level of their own (controller/runtime/logs.py)."""
    parser.add_argument("--log-level-deps", choices=LEVELS, default="warning", type=str.lower,
                        help="lowest level logged by other libraries (the CEL library, aiohttp...), whose debug "
                             "lines would drown the program's")


class BooleanFlag(argparse.Action):
    """`--flag` (true), `--flag=true|false`, and with `negatable=True` also `--no-flag` (false)."""

    def __init__(self, option_strings, dest, default=False, negatable=False, help=None, **kwargs) -> None:
        names = list(option_strings)
        if negatable:
            names += ["--no-" + name[2:] for name in option_strings if name.startswith("--")]
        super().__init__(names, dest, nargs="?", const=True, default=default, type=boolean, metavar="true|false",
                         help=help, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        if option_string and option_string.startswith("--no-"):
            if values is not True:  # `--no-flag=false`: a double negative is more likely a mistake
                parser.error(f"{option_string} takes no value")
            values = False
        setattr(namespace, self.dest, values)


class HelpFormatter(argparse.HelpFormatter):
    """States each flag's default once; shows booleans as `--flag[=true|false], --no-flag`."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if "default" in text.lower() or "%(default)" in text or default is None or default == () or \
                default is argparse.SUPPRESS or not action.option_strings:
            return text
        shown = str(default).lower() if isinstance(default, bool) else str(default)
        said = f"(default: {shown.replace('%', '%%')})"
        body, env, rest = text.partition(" [env ")  # the variable's name stays last (controller/cmd/cli.py)
        return f"{body} {said}{env}{rest}" if body else said

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if isinstance(action, BooleanFlag):
            first, *others = action.option_strings
            return ", ".join([f"{first}[={action.metavar}]", *others])
        return super()._format_action_invocation(action)


__all__ = ["FALSE", "TRUE", "BooleanFlag", "HelpFormatter", "add_log_level_deps", "bind_error", "boolean",
           "non_negative", "port", "positive_int"]
