"""Colour for the phase words of `local`'s progress lines, on a terminal only.

    paint = palette(sys.stdout)      # identity unless stdout is a terminal that wants colour
    print(paint("Succeeded"))        # green; Failed red, Running cyan, Pending yellow; others as they are

No colour when the stream is not a terminal (a pipe, a file, a test's StringIO: escape codes would be
noise there), when NO_COLOR is set to anything but "" (https://no-color.org), or when TERM is "dumb"
(Emacs' shell, some CI logs: terminals that show escape codes as text).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TextIO

RESET = "\x1b[0m"
COLOURS = {  # SGR foreground colours: what went wrong stands out, what went right reads as done
    "Succeeded": "\x1b[32m",  # green
    "Failed": "\x1b[31m",  # red
    "Running": "\x1b[36m",  # cyan
    "Pending": "\x1b[33m",  # yellow: waiting, maybe for something missing
}

Paint = Callable[[str], str]  # a phase word -> how it is printed


def wants_colour(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


def paint_phase(word: str) -> str:
    """`word` in its phase's colour (a word padded with spaces keeps them outside the colour)."""
    colour = COLOURS.get(word.strip())
    if colour is None:
        return word
    stripped = word.rstrip()
    return f"{colour}{stripped}{RESET}{word[len(stripped):]}"


def no_paint(word: str) -> str:
    return word


def palette(stream: TextIO, environ: Mapping[str, str] | None = None) -> Paint:
    return paint_phase if wants_colour(stream, environ) else no_paint


__all__ = ["COLOURS", "RESET", "Paint", "no_paint", "paint_phase", "palette", "wants_colour"]
