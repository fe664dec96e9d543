"""resource.Quantity: parsed and written back as k8s.io/apimachinery's quantity.go does.

A real API server decodes every Quantity field of a built-in kind (a container's resources, a pod's
overhead, a ResourceQuota's hard limits, an emptyDir's sizeLimit...) into its Go type and encodes it
again, so what it stores and returns is the canonical string: `0.5` -> "500m", "1000m" -> "1",
"1024Mi" -> "1Gi", `4` (a JSON number) -> "4". The rules, from ParseQuantity and CanonicalizeBytes:

- The suffix picks the format: a decimal SI suffix (`m`, `k`, `M`...) or none is DecimalSI, a binary
  one (`Ki`, `Mi`...) BinarySI, an exponent (`e3`, `E-6`) DecimalExponent; the format is kept.
- The value is exact, rounded up (away from zero) to the nano (1n), and a BinarySI value is capped at
  2^63-1. A BinarySI value strictly between 0 and 1 becomes DecimalSI.
- Written back, the mantissa is an integer and the exponent (or suffix) as large as it can be: a
  power of ten that is a multiple of 3 for the decimal formats (`1500m`, `12e6`), a power of 1024 for
  BinarySI (`1536Mi`). BinarySI values below 1024 in magnitude, or not whole, are written as
  DecimalSI. A power of ten with no suffix in the table (1e21) is written with no suffix at all.
- ParseQuantity keeps the very string it was given when the int64 fast path saw it was already in a
  canonical shape (no trailing `000`, an exponent that is a multiple of 3, no leading zero; for
  BinarySI a whole mantissa not divisible by 8), so `+1`, `1.500` and `01Ki` come back unchanged, as
  they do from a real server.

JSON numbers reach UnmarshalJSON as their literal text. Python's JSON parsers keep only the float, so
a float is written out as Go's encoding/json writes a float64 (what kubectl sends, and what a strategic
merge patch on the server produces): the shortest digits, `1e-7` and `1e+21` style beyond 1e-6..1e21.
A client sending a float literal in another spelling (`1e3`, `1.500`) gets the canonical form of the
same value, where a real server would have kept the spelling's format or string.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
NUMERIC_ERROR = "unable to parse numeric part of quantity"
SUFFIX_ERROR = "unable to parse quantity's suffix"

DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT = "DecimalSI", "BinarySI", "DecimalExponent"
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT = {e: s for s, e in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_POWER = {e // 10: s for s, e in _BINARY_SUFFIXES.items()}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_MAX_INT64 = (1 << 63) - 1
_NANO = 9  # the finest scale kept: 10^-9


class QuantityError(ValueError):
    """The error ParseQuantity returns; its text is the Go error's."""


@dataclass(frozen=True)
class Quantity:
    """unscaled * 10^-scale (inf.Dec's convention), in a format; `kept` is the string ParseQuantity kept."""

    unscaled: int
    scale: int
    format: str
    kept: str = ""

    def __str__(self) -> str:
        return self.kept or _canonical(self)


def _split(text: str) -> tuple[bool, str, str, str, str]:
    """parseQuantityString: (positive, value, numerator, denominator, suffix)."""
    positive, pos, end = True, 0, len(text)
    if end and text[0] in "+-":
        positive, pos = text[0] == "+", 1
    while pos < end and text[pos] == "0":  # leading zeros
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos >= end:
        return positive, text, text[start:], "", ""
    num = text[start:pos] or "0"
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value, suffix_start = text[:pos], pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(FORMAT_ERROR)
    return positive, value, num, denom, text[suffix_start:]


def _suffix(suffix: str) -> tuple[int, int, str]:
    """suffixer.interpret: (base, exponent, format)."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:].lstrip("+-")
        if digits and set(digits) <= _DIGITS and suffix[1:].count("-") + suffix[1:].count("+") <= 1:
            exponent = int(suffix[1:])
            if -(1 << 63) <= exponent <= _MAX_INT64:
                return 10, (exponent + (1 << 31)) % (1 << 32) - (1 << 31), DECIMAL_EXPONENT  # Go's int32()
    raise QuantityError(SUFFIX_ERROR)


def parse(text: str) -> Quantity:
    """ParseQuantity (no trimming: UnmarshalJSON trims first, the protobuf decoder does not)."""
    if not text:
        raise QuantityError(FORMAT_ERROR)
    if text == "0":
        return Quantity(0, 0, DECIMAL_SI, text)
    positive, value, num, denom, suffix = _split(text)
    base, exponent, fmt = _suffix(suffix)
    quick = _fast_path(text, positive, num, denom, exponent, fmt)
    if quick is not None:
        return quick
    digits = value.lstrip("+-")
    if not set(digits) & _DIGITS:
        raise QuantityError(NUMERIC_ERROR)  # inf.Dec.SetString needs a digit
    whole, _, fraction = digits.partition(".")
    unscaled, scale = int(whole + fraction or "0"), len(fraction)
    if base == 10:
        scale -= exponent
    else:
        unscaled <<= exponent
    if unscaled and scale > _NANO:  # round up, away from zero, to 1n
        drop = scale - _NANO
        unscaled, scale = 1 if drop > len(str(unscaled)) else -(-unscaled // 10 ** drop), _NANO
    if fmt == BINARY_SI:
        if scale <= 0 and unscaled * 10 ** -scale > _MAX_INT64:
            unscaled, scale = _MAX_INT64, 0
        elif scale > 0 and unscaled > _MAX_INT64 * 10 ** scale:
            unscaled, scale = _MAX_INT64, 0
        if 0 < unscaled < 10 ** max(scale, 0):
            fmt = DECIMAL_SI
    return Quantity(unscaled if positive else -unscaled, scale, fmt)


def _fast_path(text: str, positive: bool, num: str, denom: str, exponent: int, fmt: str) -> Quantity | None:
    """ParseQuantity's int64 path, which keeps `text` when it is already canonical."""
    if fmt == BINARY_SI:
        if exponent < 0 or denom:
            return None
        mantissa, scale = 1 << exponent, 0
        precision = 15 - len(num) - exponent * 3 // 10 - 1
    else:
        mantissa, scale = 1, exponent
        precision = 18 - len(num) - len(denom)
    scale -= len(denom)
    if precision < 0 or scale < -_NANO:
        return None
    shifted = num + denom
    value = int(shifted)
    result = value * mantissa
    if result > _MAX_INT64:
        return None
    if fmt == BINARY_SI:
        canonical = exponent % 10 == 0 and value & 7 != 0
    else:
        canonical = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
    return Quantity(result if positive else -result, -scale, fmt, text if canonical else "")


def _canonical(q: Quantity) -> str:
    """CanonicalizeBytes, mantissa and suffix."""
    if q.unscaled == 0:
        return "0"
    fmt = q.format
    if fmt == BINARY_SI:
        magnitude, scale = abs(q.unscaled), q.scale
        whole, left = divmod(magnitude, 10 ** scale) if scale > 0 else (magnitude * 10 ** -scale, 0)
        if whole >= 1024 and not left:  # else DecimalSI: below 1Ki, or not whole (nothing is rounded away)
            power = 0
            while whole % 1024 == 0:
                whole //= 1024
                power += 1
            return f"{'-' if q.unscaled < 0 else ''}{whole}{_BINARY_BY_POWER.get(power, '')}"
        fmt = DECIMAL_SI
    mantissa, exponent = q.unscaled, -q.scale
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    while exponent % 3:
        mantissa *= 10
        exponent -= 1
    if fmt == DECIMAL_EXPONENT:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    return f"{mantissa}{_DECIMAL_BY_EXPONENT.get(exponent, '')}"


def go_float(value: float, printf: bool = False) -> str:
    """A float64 as Go's encoding/json writes it: the shortest digits, in 'e' form below 1e-6 and from 1e21
    (`1e-7`, `1e+21`); or, `printf`, as fmt's %v does: 'e' form below 1e-4 and from 1e6 (`1e-05`, `1e+06`)."""
    if value == 0:
        return "-0" if str(value).startswith("-") else "0"
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    if not isinstance(exponent, int):  # 'n', 'N', 'F': NaN and infinities, which JSON cannot hold
        raise ValueError(f"not a finite number: {value!r}")
    text = "".join(map(str, digits)).rstrip("0") or "0"
    power = len(digits) + exponent - 1  # of the first digit
    minus = "-" if sign else ""
    if (power < -4 or power >= 6) if printf else (power < -6 or power >= 21):
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        written = f"{minus}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
        return written if printf else written.replace("e-0", "e-", 1)  # JSON cleans e-07 up to e-7
    point = power + 1
    if point >= len(text):
        return minus + text + "0" * (point - len(text))
    if point <= 0:
        return f"{minus}0.{'0' * -point}{text}"
    return f"{minus}{text[:point]}.{text[point:]}"


def from_json(value) -> Quantity:
    """Quantity.UnmarshalJSON of a decoded JSON value (null is the zero Quantity)."""
    if value is None:
        return Quantity(0, 0, "")
    if isinstance(value, str):
        return parse(value.strip())
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise QuantityError(FORMAT_ERROR)  # the literal `true`, an object or an array does not parse
    return parse(str(value) if isinstance(value, int) else go_float(value))


def canonical(value) -> str:
    """The string a real server stores for a JSON Quantity value; QuantityError if it does not parse."""
    return str(from_json(value))
