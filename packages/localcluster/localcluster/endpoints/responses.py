"""The answers: JSON bodies, metav1.Status errors, and Warning headers as the apiserver writes them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson
from aiohttp import web

from ..errors import ApiError
from .request_targets import DEPRECATION, JSON

if TYPE_CHECKING:
    pass


HEADER_CONTROLS = {c: " " for c in [*range(0x09), *range(0x0A, 0x20), 0x7F]}  # what aiohttp refuses in a header


def warning_header(text: str) -> str:
    """A Warning header as the apiserver writes one: code 299, no agent, the text quoted (`"` and `\\` escaped),
    control characters written as spaces as Go's net/http writes line breaks (never a header injection, or a 500)."""
    return '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"').translate(HEADER_CONTROLS) + '"'


async def deprecation_warning(request: web.Request, response: web.StreamResponse) -> None:
    """The apiserver warns of a deprecated API version on every request to it, whatever the verb or
    outcome (its installer wraps each handler); a watch's header goes out before the first event."""
    text = request.get(DEPRECATION)
    if text:
        response.headers.add("Warning", warning_header(text))


def json_response(body, status: int = 200, headers: dict | None = None) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type=JSON, headers=headers)


def error_response(err: ApiError) -> web.Response:
    response = json_response(err.status(), err.code, err.headers)
    for text in getattr(err, "warnings", ()):  # what admission webhooks warned of before one refused
        response.headers.add("Warning", warning_header(text))
    return response


# The apiserver's limit on a request body (apiserver's MaxRequestBodyBytes): larger ones get 413.
