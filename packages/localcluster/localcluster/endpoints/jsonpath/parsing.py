"""A JSONPath template parsed as client-go's parser.go parses it: a tree of tuples."""

from __future__ import annotations

import functools
import math
import re

from .values import EOF, INT64, JSONPathError, PathFloat

# --- parsing (parser.go) ---------------------------------------------------------------------------------------

_DICT_KEY = re.compile(r"'([^']*)'")
_SLICE = re.compile(r"(-?[0-9]*)(:-?[0-9]*)?(:-?[0-9]*)?")
_FILTER = re.compile(r"([^!<>=]+)([!<>=]+)(.+?)")
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")


def _is_digit(r: str) -> bool:
    return r != EOF and r.isdecimal()  # unicode.IsDigit: Nd


def _is_alphanumeric(r: str) -> bool:
    return r == "_" or (r != EOF and (r.isalpha() or r.isdecimal()))


def _is_terminator(r: str) -> bool:
    return r == EOF or r in " \t\r\n.,[]$@{}"


@functools.lru_cache(maxsize=1024)
def parse(text: str) -> tuple:
    """The root nodes of a template (`{.status.phase}`): text and action lists. JSONPathError if client-go
    refuses it."""
    parser = _Parser(text)
    parser.run()
    return tuple(parser.root)


def _action(text: str) -> tuple:
    """parseAction: `text` parsed as one action, its list node."""
    return parse("{" + text + "}")[0]


class _Parser:
    def __init__(self, text: str) -> None:
        self.input, self.pos, self.start, self.width = text, 0, 0, 0
        self.root: list = []

    def consume(self) -> str:
        value = self.input[self.start:self.pos]
        self.start = self.pos
        return value

    def next(self) -> str:
        if self.pos >= len(self.input):
            self.width = 0
            return EOF
        self.width = 1
        self.pos += 1
        return self.input[self.pos - 1]

    def peek(self) -> str:
        r = self.next()
        self.backup()
        return r

    def backup(self) -> None:
        self.pos -= self.width

    def run(self) -> None:
        """parseText and parseLeftDelim, in turn until the end."""
        while True:
            brace = self.input.find("{", self.pos)
            self.pos = len(self.input) if brace < 0 else brace
            if self.pos > self.start:
                self.root.append(("text", self.consume()))
            if brace < 0:
                return
            self.pos += 1
            self.consume()
            nodes: list = []
            self.root.append(("list", nodes))
            self.inside(nodes)

    def inside(self, cur: list) -> None:
        """parseInsideAction, up to and past its right delimiter."""
        while True:
            if self.input.startswith("}", self.pos):
                self.pos += 1
                self.consume()
                return
            if self.input.startswith("[?(", self.pos):
                self.filter(cur)
                continue
            if self.input.startswith("..", self.pos):
                self.recursive(cur)
                continue
            r = self.next()
            if r == EOF or r in "\r\n":
                raise JSONPathError("unclosed action")
            if r in " @$":  # a space, or the current object: passed over
                self.consume()
            elif r == "[":
                self.array(cur)
            elif r in "\"'":
                self.quote(cur, r)
            elif r == ".":
                self.field(cur)
            elif r in "+-" or _is_digit(r):
                self.backup()
                self.number(cur)
            elif _is_alphanumeric(r):
                self.backup()
                self.identifier(cur)
            else:
                raise JSONPathError(f"unrecognized character in action: U+{ord(r):04X} {r!r}")

    def identifier(self, cur: list) -> None:
        while not _is_terminator(self.next()):
            pass
        self.backup()
        value = self.consume()
        cur.append(("bool", value == "true") if value in ("true", "false") else ("identifier", value))

    def recursive(self, cur: list) -> None:
        if cur and cur[-1][0] == "recursive":
            raise JSONPathError("invalid multiple recursive descent")
        self.pos += 2
        self.consume()
        cur.append(("recursive",))
        if _is_alphanumeric(self.peek()):
            self.field(cur)

    def number(self, cur: list) -> None:
        if self.peek() in ("+", "-"):
            self.next()
        while True:
            r = self.next()
            if r != "." and not _is_digit(r):
                self.backup()
                break
        value = self.consume()
        if _INT.fullmatch(value) and -INT64 <= int(value) < INT64:
            cur.append(("int", int(value)))
        elif _FLOAT.fullmatch(value) and math.isfinite(float(value)):
            cur.append(("float", PathFloat(value)))
        else:
            raise JSONPathError(f"cannot parse number {value}")

    def array(self, cur: list) -> None:
        while (r := self.next()) != "]":
            if r == EOF or r == "\n":
                raise JSONPathError("unterminated array")
        text = self.consume()[1:-1]
        if text == "*":
            text = ":"
        parts = text.split(",")
        if len(parts) > 1:
            cur.append(("union", tuple(_action(f"[{part.strip(' ')}]") for part in parts)))
            return
        key = _DICT_KEY.fullmatch(text)
        if key is not None:
            cur.extend(_action("." + key.group(1))[1])
            return
        match = _SLICE.fullmatch(text)
        if match is None:
            raise JSONPathError(f"invalid array index {text}")
        params: list[tuple[bool, int, bool]] = []  # (known, value, derived)
        for i, value in enumerate(group or "" for group in match.groups()):
            if value and i > 0:
                value = value[1:]
                if not value:
                    params.append((False, 0, False))
                    continue
            if value:
                if not _INT.fullmatch(value) or not -INT64 <= int(value) < INT64:
                    raise JSONPathError(f"array index {value} is not a number")
                params.append((True, int(value), False))
            elif i == 1:
                params.append((True, params[0][1] + 1, True))
            else:
                params.append((False, 0, False))
        cur.append(("array", tuple(params)))

    def filter(self, cur: list) -> None:
        self.pos += len("[?(")
        self.consume()
        begin = end = False
        pair = ""
        while True:
            r = self.next()
            if r == EOF or r == "\n":
                raise JSONPathError("unterminated filter")
            if r in ("\"", "'"):
                if not begin:
                    begin, pair = True, r
                    continue
                if self.input[self.pos - 2] != "\\" and r == pair:
                    end = True
            elif r == ")" and begin == end:
                break
        if self.next() != "]":
            raise JSONPathError("unclosed array expect ]")
        text = self.consume()[:-2]
        match = _FILTER.fullmatch(text)
        if match is None:
            cur.append(("filter", _action(text), ("list", ()), "exists"))
        else:
            cur.append(("filter", _action(match.group(1)), _action(match.group(3)), match.group(2)))

    def quote(self, cur: list, end: str) -> None:
        while True:
            r = self.next()
            if r == EOF or r == "\n":
                raise JSONPathError("unterminated quoted string")
            if r == end and self.input[self.pos - 2] != "\\":
                break
        value = self.consume()
        cur.append(("text", _unquote(value)))

    def field(self, cur: list) -> None:
        self.consume()
        while True:  # advance: up to the next terminator not escaped
            r = self.next()
            if r == "\\":
                self.next()
            elif _is_terminator(r):
                self.backup()
                break
        value = self.consume()
        cur.append(("wildcard",) if value == "*" else ("field", value.replace("\\", "")))


_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92}


def _unquote(quoted: str) -> str:
    """UnquoteExtend: strconv.Unquote, single quotes too."""
    if len(quoted) < 2 or quoted[0] != quoted[-1] or quoted[0] not in "\"'":
        raise JSONPathError(f"unquote string {quoted} error invalid syntax")
    quote, s = quoted[0], quoted[1:-1]
    if "\\" not in s and quote not in s:
        return s
    out = bytearray()
    while s:
        value, multibyte, s = _unquote_char(s, quote, quoted)
        out += chr(value).encode("utf-8", "surrogatepass") if multibyte else bytes([value])
    return out.decode("utf-8", "surrogateescape")


def _unquote_char(s: str, quote: str, quoted: str) -> tuple[int, bool, str]:
    """strconv.UnquoteChar: (value, multibyte, tail)."""
    error = JSONPathError(f"unquote string {quoted} error invalid syntax")
    c = s[0]
    if c == quote:
        raise error
    if ord(c) >= 0x80:
        return ord(c), True, s[1:]
    if c != "\\":
        return ord(c), False, s[1:]
    if len(s) <= 1:
        raise error
    c, s = s[1], s[2:]
    if c in _ESCAPES:
        return _ESCAPES[c], False, s
    if c in "xuU":
        n = {"x": 2, "u": 4, "U": 8}[c]
        digits = s[:n]
        if len(digits) < n or not re.fullmatch(r"[0-9a-fA-F]+", digits):
            raise error
        value = int(digits, 16)
        if c == "x":
            return value, False, s[n:]
        if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
            raise error
        return value, True, s[n:]
    if c in "01234567":
        digits = c + s[:2]
        if len(digits) < 3 or not re.fullmatch(r"[0-7]{3}", digits) or int(digits, 8) > 255:
            raise error
        return int(digits, 8), False, s[2:]
    if c in "'\"" and c == quote:
        return ord(c), False, s
    raise error


