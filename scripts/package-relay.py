#!/usr/bin/env python3
"""The package cache's front door (scripts/package-cache.sh starts it): apt in the test containers
and VMs talks to this port, which hands each connection to apt-cacher-ng, or, when apt-cacher-ng
does not take it, straight to the archive the request names. So a cache that dies halfway through a
run costs apt a retry (Acquire::Retries in the images), never a failed download.

    package-relay.py LISTEN_PORT CACHE_PORT

apt sends proxy requests in absolute form (GET http://host/path HTTP/1.1), which HTTP/1.1 origin
servers accept as they are (RFC 9112, 3.2.2): the fallback forwards the bytes unchanged.
"""

from __future__ import annotations

import asyncio
import sys
from urllib.parse import urlsplit

HEAD_LIMIT = 64 * 1024


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


def origin(head: bytes) -> tuple[str, int] | None:
    """(host, port) of an absolute-form request line, None for any other request."""
    parts = head.split(b"\r\n", 1)[0].split()
    if len(parts) != 3 or not parts[1].startswith(b"http://"):
        return None
    url = urlsplit(parts[1].decode("ascii", "replace"))
    return (url.hostname, url.port or 80) if url.hostname else None


async def connect(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
    try:
        return await asyncio.wait_for(asyncio.open_connection(host, port), timeout=5)
    except (TimeoutError, OSError):
        return None


async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter, cache_port: int) -> None:
    try:
        head = await asyncio.wait_for(client_r.readuntil(b"\r\n\r\n"), timeout=60)
    except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        client_w.close()
        return
    if head.startswith(b"GET /gpulab-package-relay "):  # who is on this port (package-cache.sh asks)
        client_w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 21\r\nConnection: close\r\n\r\ngpulab package relay\n")
        await client_w.drain()
        client_w.close()
        return
    upstream = await connect("127.0.0.1", cache_port)
    if upstream is None and (target := origin(head)):
        upstream = await connect(*target)
    if upstream is None:
        client_w.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await client_w.drain()
        client_w.close()
        return
    upstream_r, upstream_w = upstream
    upstream_w.write(head)
    await asyncio.gather(pipe(client_r, upstream_w), pipe(upstream_r, client_w))


async def main(listen_port: int, cache_port: int) -> None:
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, cache_port), host="0.0.0.0", port=listen_port, limit=HEAD_LIMIT
    )
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
