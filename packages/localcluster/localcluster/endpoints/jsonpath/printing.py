"""Results printed as PrintResults prints them: Go's text, %v floats and encoding/json."""

from __future__ import annotations

import math
import re
from decimal import Decimal

from .values import Uint8, number, utf8_bytes

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
    items = sorted(value.items(), key=lambda item: utf8_bytes(item[0]))
    return "{" + ",".join(f"{_json_string(key)}:{go_json(item)}" for key, item in items) + "}"


def go_type(value) -> str:
    value = number(value)
    for kind, name in ((dict, "map[string]interface {}"), (bool, "bool"), (Uint8, "uint8"), (int, "int64"),
                       (float, "float64"), (str, "string")):
        if isinstance(value, kind):
            return name
    return "interface {}"
