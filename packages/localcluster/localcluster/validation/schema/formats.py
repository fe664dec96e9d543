"""The string formats kube-openapi checks (strfmt): dates, UUIDs, addresses, base64..."""

from __future__ import annotations

import base64
import functools
import ipaddress
import re
from datetime import date
from typing import Any

# --- formats ------------------------------------------------------------------------------------
# The string formats the server validates (others are stripped from CRD schemas, int32/int64
# included, so they accept anything); the cheap ones are checked here, the rest are lenient.

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_TIME = re.compile(r"(\d{4}-\d{2}-\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")
_UUIDS = {
    "uuid": re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.IGNORECASE),
    "uuid3": re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-3[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE),
    "uuid4": re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", re.IGNORECASE),
    "uuid5": re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", re.IGNORECASE),
}


def _is_date(text: str) -> bool:
    try:
        return bool(_DATE.fullmatch(text)) and bool(date.fromisoformat(text))
    except ValueError:
        return False


def _is_date_time(text: str) -> bool:
    match = _DATE_TIME.fullmatch(text)
    return match is not None and _is_date(match[1]) and int(match[2]) < 24 and int(match[3]) < 60 and int(match[4]) < 60


def _matches(pattern: re.Pattern) -> Any:
    return lambda text: pattern.fullmatch(text) is not None


def _parses(parser: Any) -> Any:
    def check(text: str) -> bool:
        try:
            parser(text)
        except ValueError:  # binascii.Error included
            return False
        return True

    return check


FORMAT_CHECKS = {
    "datetime": _is_date_time,
    "date": _is_date,
    **{name: _matches(pattern) for name, pattern in _UUIDS.items()},
    "ipv4": _parses(ipaddress.IPv4Address),
    "ipv6": _parses(ipaddress.IPv6Address),
    "cidr": _parses(functools.partial(ipaddress.ip_network, strict=False)),
    "byte": _parses(functools.partial(base64.b64decode, validate=True)),
}


