"""client-go's JSONPath (k8s.io/client-go/util/jsonpath), as kube-apiserver evaluates a CRD's printer columns.

apiextensions-apiserver's tableconvertor parses each column's `jsonPath` wrapped in `{}` with missing keys
allowed, takes the first value of the first result (none, or an error anywhere, is an empty cell: null), and
prints a string column's value with PrintResults. This is a port of that parser and evaluator, so a column
gets what it gets from kube-apiserver, quirks included:

- a filter is one comparison, `[?(@.type=="Failed")]` (`==`, `!=`, `<`, `>`, `<=`, `>=`), or an existence test,
  `[?(@.message)]`; no `&&`, and a filter of what is not a list (a filter's result) is an error;
- comparisons are Go's text/template ones: values of different kinds (a string and a number, `1` and `1.0`)
  do not compare, an error that empties the cell even when an earlier item matched;
- `['a.b']` is read as the two fields `a` and `b` (only `a\\.b` escapes a dot), `[]` is `[0]`, and an index
  out of range is an error;
- a string column prints a map or a list as JSON (json.Marshal: sorted keys, `<` as `\\u003c`), a null as
  `<no value>`, a float as Go's `%v` (`1.2345675e+06`).

The numbers of an object are taken as kube-apiserver holds them after its JSON round trip: a whole float is an
integer (`1.0` is `1`) and an integer past int64 a float. A `{range}` is evaluated within one row; client-go's
JSONPath keeps what a range consumed for the rows after it, which no column should rely on.
"""

from __future__ import annotations

import functools
import math
import re
from decimal import Decimal

EOF = ""
INT64 = 2**63


class JSONPathError(ValueError):
    """A path client-go does not parse."""


class Failed(Exception):
    """An evaluation's error, with the values Go returns beside it (an existence filter still counts them)."""

    def __init__(self, message: str, values: list) -> None:
        super().__init__(message)
        self.values = values


class Uint8(int):
    """A byte of a string (`.*` and `..` walk a string's bytes): Go's uint8, which compares with integers only."""


class _Float(float):
    """A float written in the path (`1.0`): kept a float where the object's whole floats are integers."""


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
            cur.append(("float", _Float(value)))
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


# --- evaluation (jsonpath.go) ----------------------------------------------------------------------------------


def number(value):
    """A JSON number as kube-apiserver holds it once stored: int64, or float64 if not whole or past int64."""
    if type(value) is float and value.is_integer() and -INT64 <= value < INT64:
        return int(value)
    if type(value) is int and not -INT64 <= value < INT64:
        return float(value)
    return value


def find_results(nodes: tuple, data) -> list[list]:
    """FindResults with missing keys allowed: one list of values per root node. Failed on an error."""
    return _Evaluation(nodes).find(data, 0)


class _Evaluation:
    def __init__(self, nodes: tuple) -> None:
        self.nodes = nodes
        self.begin_range = self.in_range = self.end_range = 0
        self.last_end: int | None = None

    def find(self, data, first: int) -> list[list]:
        current = [data]
        full: list[list] = []
        i = first
        while i < len(self.nodes):
            results = self.walk(current, self.nodes[i])
            if 0 < self.end_range <= self.in_range:  # an {end}: this block is over
                self.end_range -= 1
                self.last_end = i
                break
            if self.begin_range > 0:  # a {range}: the nodes after it, for each value
                self.begin_range -= 1
                self.in_range += 1
                if results:
                    for value in results:
                        full += self.find(value, i + 1)
                else:
                    self.find(None, i + 1)
                self.in_range -= 1
                if self.last_end is not None and self.last_end > i:
                    i = self.last_end  # on after the range's {end}
                i += 1
                continue
            full.append(results)
            i += 1
        return full

    def walk(self, values: list, node: tuple) -> list:
        kind = node[0]
        if kind == "list":
            for child in node[1]:
                values = self.walk(values, child)
            return values
        if kind == "text":
            return [node[1]]
        if kind in ("int", "float", "bool"):
            return [node[1]] * len(values)
        return getattr(self, "_" + kind)(values, node)

    def _field(self, values: list, node: tuple) -> list:
        return [value[node[1]] for value in values if isinstance(value, dict) and node[1] in value]

    def _array(self, values: list, node: tuple) -> list:
        result: list = []
        for value in values:
            if value is None:
                continue
            if not isinstance(value, list):
                raise Failed(f"{_go_type(value)} is not array or slice", values)
            (known0, start, _), (known1, stop, derived1), (known2, step, _) = node[1]
            length = len(value)
            start = start if known0 else 0
            start += length if start < 0 else 0
            stop = stop if known1 else length
            stop += length if stop < 0 or (stop == 0 and derived1) else 0
            if stop == start:
                return result  # zero elements asked for: the values so far, the rest not looked at
            if not 0 <= start < length or not 0 <= stop <= length:
                raise Failed(f"array index out of bounds: index {start}, length {length}", values)
            if start > stop:
                raise Failed(f"starting index {start} is greater than ending index {stop}", values)
            if known2 and step <= 0:
                raise Failed("step must be > 0", values)
            result += value[start:stop:step if known2 else 1]
        return result

    def _union(self, values: list, node: tuple) -> list:
        result: list = []
        for branch in node[1]:
            try:
                result += self.walk(values, branch)
            except Failed as failed:
                raise Failed(str(failed), values) from None
        return result

    def _wildcard(self, values: list, node: tuple) -> list:
        return [child for value in values for child in _children(value)]

    def _recursive(self, values: list, node: tuple) -> list:
        result: list = []
        for value in values:
            children = _children(value)
            if children:
                result.append(value)
                result += self._recursive(children, node)
        return result

    def _identifier(self, values: list, node: tuple) -> list:
        if node[1] == "range":
            self.begin_range += 1
            return values
        if node[1] == "end":
            if self.in_range > 0:
                self.end_range += 1
                return []
            raise Failed("not in range, nothing to end", [])
        raise Failed(f"unrecognized identifier {node[1]}", values)

    def _filter(self, values: list, node: tuple) -> list:
        _, left, right, operator = node
        result: list = []
        for value in values:
            if not isinstance(value, list):
                raise Failed(f"{go_text(value)} is not array or slice and cannot be filtered", values)
            for item in value:
                try:
                    lefts, error = self.walk([item], left), None
                except Failed as failed:
                    lefts, error = failed.values, failed
                if operator == "exists":
                    if lefts:
                        result.append(item)
                    continue
                if error is not None:
                    raise Failed(str(error), values)
                if not lefts:
                    continue
                if len(lefts) > 1:
                    raise Failed("can only compare one element at a time", values)
                try:
                    rights = self.walk([item], right)
                except Failed as failed:
                    raise Failed(str(failed), values) from None
                if not rights:
                    continue
                if len(rights) > 1:
                    raise Failed("can only compare one element at a time", values)
                if compare(operator, lefts[0], rights[0], result):
                    result.append(item)
        return result


def _children(value) -> list:
    """What `*` and `..` step into: a map's values, a list's items, a string's bytes."""
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        return [Uint8(b) for b in _bytes(value)]
    return []


def _bytes(text: str) -> bytes:
    """A string's bytes (a byte that is not UTF-8, from a `\\xff` of a quoted string, is kept as it was)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


# --- comparison (third_party/forked/golang/template/funcs.go) --------------------------------------------------


def _basic_kind(value) -> str:
    value = number(value)
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, Uint8):
        return "uint"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    raise ValueError("invalid type for comparison")


def _kinds(a, b) -> tuple[str, str, object, object]:
    ka, kb = _basic_kind(a), _basic_kind(b)
    if ka != kb and {ka, kb} != {"int", "uint"}:
        raise ValueError("incompatible types for comparison")
    if ka == "string" == kb:
        return ka, kb, _bytes(a), _bytes(b)
    return ka, kb, number(a), number(b)


def _equal(a, b) -> bool:
    _, _, x, y = _kinds(a, b)
    return x == y


def _less(a, b) -> bool:
    ka, _, x, y = _kinds(a, b)
    if ka == "bool":
        raise ValueError("invalid type for comparison")
    return x < y  # type: ignore[operator]  # same kinds, or an int and a byte


_OPERATORS = {
    "==": _equal,
    "!=": lambda a, b: not _equal(a, b),
    "<": _less,
    "<=": lambda a, b: _less(a, b) or _equal(a, b),
    ">": lambda a, b: not (_less(a, b) or _equal(a, b)),
    ">=": lambda a, b: not _less(a, b),
}


def compare(operator: str, left, right, so_far: list | None = None) -> bool:
    """A filter's comparison; Failed (with the items matched so far) for an operator it does not know or
    values that do not compare."""
    if operator not in _OPERATORS:
        raise Failed(f"unrecognized filter operator {operator}", so_far or [])
    try:
        return _OPERATORS[operator](left, right)
    except ValueError as error:
        raise Failed(str(error), so_far or []) from None


# --- printing (PrintResults) -----------------------------------------------------------------------------------


def print_result(value) -> str:
    """PrintResults of one value: a map or a list as JSON, null as `<no value>`, anything else as fmt.Fprint."""
    if isinstance(value, (dict, list)):
        return go_json(value)
    if value is None:
        return "<no value>"
    return go_text(value)


def go_text(value) -> str:
    """fmt.Fprint of a scalar."""
    value = number(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    return str(value)


def _digits(value: float) -> tuple[str, int]:
    """The shortest decimal digits that read back as abs(value) (Python's repr and Go's agree), and the decimal
    point's place among them."""
    _, digits, exponent = Decimal(repr(abs(value))).as_tuple()
    text = "".join(map(str, digits)).rstrip("0")
    assert isinstance(exponent, int)
    return text, exponent + len(digits)


def go_float(value: float, fmt: str = "g") -> str:
    """strconv.FormatFloat(value, fmt, -1, 64): `g` is `%v` (exponent from 1e+06, or below 1e-04), `e` and `f`."""
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    digits, point = _digits(value)
    sign = "-" if value < 0 else ""
    exponent = point - 1
    if fmt == "e" or (fmt == "g" and (exponent < -4 or exponent >= 6)):
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


_JSON_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _json_string(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch in _JSON_ESCAPES:
            out.append(_JSON_ESCAPES[ch])
        elif ch < " " or ch in "<>&\u2028\u2029":
            out.append(f"\\u{ord(ch):04x}")
        elif "\ud800" <= ch <= "\udfff":
            out.append("\\ufffd")  # not UTF-8
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def go_json(value) -> str:
    """encoding/json.Marshal of a decoded object: sorted keys, HTML-safe strings, floats in `f` form between 1e-6
    and 1e21."""
    value = number(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if 1e-6 <= abs(value) < 1e21:
            return go_float(value, "f")
        return re.sub(r"e-0(\d)$", r"e-\1", go_float(value, "e"))  # e-07 as e-7
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, list):
        return "[" + ",".join(go_json(item) for item in value) + "]"
    items = sorted(value.items(), key=lambda item: _bytes(item[0]))
    return "{" + ",".join(f"{_json_string(key)}:{go_json(item)}" for key, item in items) + "}"


def _go_type(value) -> str:
    value = number(value)
    for kind, name in ((dict, "map[string]interface {}"), (bool, "bool"), (Uint8, "uint8"), (int, "int64"),
                       (float, "float64"), (str, "string")):
        if isinstance(value, kind):
            return name
    return "interface {}"
