"""Scripted HTTP servers for the write connections' tests: each connection is served by a script that reads
requests and writes exact bytes, so that a test can make a server do what a real one does now and then, or what
a hostile or broken one would."""

from __future__ import annotations

import asyncio

OK = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"made\":1}\n"


class Scripted:
    """A TCP server whose n-th connection is served by scripts[n](reader, writer); counts connections."""

    def __init__(self, *scripts) -> None:
        self.scripts = list(scripts)
        self.connections = 0
        self.requests: list[bytes] = []
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc) -> None:
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        script = self.scripts[min(self.connections, len(self.scripts) - 1)]
        self.connections += 1
        try:
            await script(self, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def read_request(self, reader: asyncio.StreamReader) -> bytes:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        request = head + await reader.readexactly(length)
        self.requests.append(request)
        return request

    def paths(self) -> list[bytes]:
        """The method and path of each request, in the order they came: b"POST /a"."""
        return [b" ".join(r.split(b" ")[:2]) for r in self.requests]


async def answer_forever(server: Scripted, reader, writer) -> None:
    while True:
        await server.read_request(reader)
        writer.write(OK)
        await writer.drain()


async def answer_once_then_drop_the_next(server: Scripted, reader, writer) -> None:
    await server.read_request(reader)
    writer.write(OK)
    await writer.drain()
    await server.read_request(reader)  # the next request arrives, and the connection closes unanswered


async def drop_unanswered(server: Scripted, reader, writer) -> None:
    await server.read_request(reader)


async def never_answer(server: Scripted, reader, writer) -> None:
    await server.read_request(reader)
    await reader.read()  # until the client gives up and closes


def answer_with(*answers: bytes):
    """A script that answers its connection's n-th request with answers[n], written whole, then reads on."""

    async def script(server: Scripted, reader, writer) -> None:
        for answer in answers:
            await server.read_request(reader)
            writer.write(answer)
            await writer.drain()
        await reader.read()

    return script

