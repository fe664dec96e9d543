"""SPDY/3 framing, the server's half, as far as Kubernetes' streaming connections use it.

kubectl's port-forward speaks SPDY/3.1 (github.com/moby/spdystream) to the kubelet, since 1.30
tunnelled through a WebSocket: the bytes of the SPDY session travel in binary messages whose
boundaries mean nothing. spdystream opens streams with SYN_STREAM (headers only), waits for a
SYN_REPLY, sends DATA frames, half-closes a stream with an empty DATA frame flagged FIN, resets it
with RST_STREAM, pings with PING (the receiver echoes it) and ends the session with GOAWAY. It
keeps no flow-control windows, so neither does this; SETTINGS and WINDOW_UPDATE are read and
ignored.

Header blocks are compressed with zlib and the dictionary of the SPDY/3 draft (section 2.6.10.1),
one compression context per direction for the whole session.

What a peer can make the reader hold is bounded: a frame longer than the Framer's `max_length` and a
header block inflating past MAX_HEADERS are protocol errors, which end the session.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
CANCEL = 5  # the RST_STREAM status spdystream's Stream.Reset sends
MAX_DATA = 32 * 1024  # bytes per DATA frame written (the format allows up to 2^24 - 1)
MAX_LENGTH = 0xFFFFFF  # the longest frame the format can carry (24 bits of length)
MAX_HEADERS = 64 * 1024  # bytes a header block may inflate to: a few zlib bytes could otherwise become gigabytes

# The SPDY/3 header dictionary: length-prefixed words, then a plain tail.
_WORDS = [*("options head post put delete trace accept accept-charset accept-encoding accept-language accept-ranges "
            "age allow authorization cache-control connection content-base content-encoding content-language "
            "content-length content-location content-md5 content-range content-type date etag expect expires from "
            "host if-match if-modified-since if-none-match if-range if-unmodified-since last-modified location "
            "max-forwards pragma proxy-authenticate proxy-authorization range referer retry-after server te trailer "
            "transfer-encoding upgrade user-agent vary via warning www-authenticate method get status").split(),
          "200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin"]
_TAIL = ("100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
         "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
         "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
         "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
         "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
         "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.")
DICTIONARY = b"".join(struct.pack(">I", len(w)) + w.encode() for w in _WORDS) + _TAIL.encode()


class ProtocolError(Exception):
    """The peer sent something that is not SPDY/3: the session cannot go on."""


@dataclass(slots=True)
class Frame:
    """A frame read: `kind` is a control type, or 0 for DATA."""

    kind: int
    stream_id: int = 0
    flags: int = 0
    data: bytes = b""
    headers: dict[str, list[str]] | None = None
    status: int = 0  # RST_STREAM's status, PING's id

    @property
    def fin(self) -> bool:
        return bool(self.flags & FLAG_FIN)


class Framer:
    """Turns the bytes of a session into frames, and frames into bytes."""

    def __init__(self, max_length: int = MAX_LENGTH) -> None:
        self.max_length = max_length
        self._buffer = bytearray()
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj(9, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY, zdict=DICTIONARY)

    # --- reading ----------------------------------------------------------------------------

    def feed(self, data: bytes) -> list[Frame]:
        """The frames completed by `data` (a frame may span several calls)."""
        self._buffer += data
        frames = []
        while len(self._buffer) >= 8:
            word, flags_length = struct.unpack_from(">II", self._buffer)
            length = flags_length & 0xFFFFFF
            if length > self.max_length:
                raise ProtocolError(f"frame of {length} bytes, more than {self.max_length}")
            if len(self._buffer) < 8 + length:
                break
            payload = bytes(self._buffer[8:8 + length])
            del self._buffer[:8 + length]
            flags = flags_length >> 24
            if not word & 0x80000000:
                frames.append(Frame(0, word & 0x7FFFFFFF, flags, payload))
                continue
            if (word >> 16) & 0x7FFF != VERSION:
                raise ProtocolError(f"unsupported SPDY version {(word >> 16) & 0x7FFF}")
            try:
                frames.append(self._control(word & 0xFFFF, flags, payload))
            except struct.error as exc:  # a control frame shorter than its fixed fields
                raise ProtocolError(f"control frame {word & 0xFFFF} of {length} bytes: {exc}") from exc
        return frames

    def _control(self, kind: int, flags: int, payload: bytes) -> Frame:
        if kind in (SYN_STREAM, SYN_REPLY, HEADERS):
            skip = 10 if kind == SYN_STREAM else 4
            stream_id = struct.unpack_from(">I", payload)[0] & 0x7FFFFFFF
            return Frame(kind, stream_id, flags, headers=self._headers(payload[skip:]))
        if kind == RST_STREAM:
            stream_id, status = struct.unpack_from(">II", payload)
            return Frame(kind, stream_id & 0x7FFFFFFF, flags, status=status)
        if kind == PING:
            return Frame(kind, flags=flags, status=struct.unpack_from(">I", payload)[0])
        if kind == GOAWAY:
            return Frame(kind, struct.unpack_from(">I", payload)[0] & 0x7FFFFFFF, flags)
        return Frame(kind, flags=flags, data=payload)  # SETTINGS, WINDOW_UPDATE: nothing to act on

    def _headers(self, block: bytes) -> dict[str, list[str]]:
        try:
            raw = self._inflate.decompress(block, MAX_HEADERS + 1)
            if len(raw) > MAX_HEADERS:
                raise ProtocolError(f"header block inflating past {MAX_HEADERS} bytes")
            (count,) = struct.unpack_from(">I", raw)
            at, headers = 4, {}
            for _ in range(count):
                values = []
                for _ in (0, 1):
                    (size,) = struct.unpack_from(">I", raw, at)
                    values.append(raw[at + 4:at + 4 + size].decode())
                    at += 4 + size
                headers[values[0].lower()] = values[1].split("\x00")
        except (zlib.error, struct.error, UnicodeDecodeError) as exc:
            raise ProtocolError(f"bad header block: {exc}") from exc
        return headers

    # --- writing ----------------------------------------------------------------------------

    def syn_reply(self, stream_id: int, headers: dict[str, str] | None = None, fin: bool = False) -> bytes:
        pairs = sorted((headers or {}).items())
        raw = struct.pack(">I", len(pairs)) + b"".join(
            struct.pack(">I", len(k)) + k.lower().encode() + struct.pack(">I", len(v)) + v.encode() for k, v in pairs)
        block = self._deflate.compress(raw) + self._deflate.flush(zlib.Z_SYNC_FLUSH)
        return _control(SYN_REPLY, FLAG_FIN if fin else 0, struct.pack(">I", stream_id) + block)

    def data(self, stream_id: int, payload: bytes, fin: bool = False) -> bytes:
        """DATA frames carrying `payload`, the last flagged FIN if asked (an empty one: just the FIN)."""
        chunks = [payload[i:i + MAX_DATA] for i in range(0, len(payload), MAX_DATA)] or [b""]
        return b"".join(
            struct.pack(">II", stream_id, ((FLAG_FIN if fin and i == len(chunks) - 1 else 0) << 24) | len(chunk))
            + chunk for i, chunk in enumerate(chunks))

    def rst_stream(self, stream_id: int, status: int = CANCEL) -> bytes:
        return _control(RST_STREAM, 0, struct.pack(">II", stream_id, status))

    def ping(self, ping_id: int) -> bytes:
        return _control(PING, 0, struct.pack(">I", ping_id))

    def goaway(self, last_stream_id: int) -> bytes:
        return _control(GOAWAY, 0, struct.pack(">II", last_stream_id, 0))


def _control(kind: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload
