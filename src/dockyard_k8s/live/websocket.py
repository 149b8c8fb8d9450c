"""A minimal WebSocket client (RFC 6455), receive side only: enough to follow the Ray
dashboard's ``/api/jobs/{id}/logs/tail``, which sends the job's log as text messages as it
grows and closes when the job ends. Standard library only (no aiohttp/websockets
dependency for one endpoint).

What it does: the HTTP/1.1 Upgrade handshake (``Sec-WebSocket-Key`` and its ``Accept``
check), unmasked server frames of any length, fragmented messages, ping -> pong (masked,
as client frames must be), close -> the stream ends.
"""

from __future__ import annotations

import base64
import hashlib
import os
import socket
import ssl
import struct
from collections.abc import Iterator, Mapping
from urllib.parse import urlsplit

_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 section 1.3


class WebSocketError(Exception):
    """The server did not upgrade (``status`` is its HTTP status), or broke the protocol."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise WebSocketError("connection closed in the middle of a frame")
        out += chunk
    return out


def _frame(opcode: int, payload: bytes) -> bytes:
    """A client frame: FIN set, masked (RFC 6455 5.3)."""
    mask = os.urandom(4)
    head = bytes([0x80 | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 1 << 16:
        head += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def _handshake(sock: socket.socket, host: str, path: str, headers: Mapping[str, str]) -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}", "Upgrade: websocket", "Connection: Upgrade",
             f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13",
             *(f"{k}: {v}" for k, v in headers.items() if k.lower() not in ("host", "connection", "upgrade"))]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            raise WebSocketError("the server closed the connection during the handshake")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode(errors="replace").split("\r\n")
    parts = status_line.split(" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    if status != 101:
        raise WebSocketError(f"no WebSocket upgrade: {status_line}", status)
    answer = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    expected = base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()
    if answer.get("sec-websocket-accept") != expected:
        raise WebSocketError("bad Sec-WebSocket-Accept in the upgrade answer")
    return rest


class _Reader:
    def __init__(self, sock: socket.socket, pending: bytes) -> None:
        self.sock = sock
        self.pending = pending

    def read(self, n: int) -> bytes:
        if len(self.pending) >= n:
            out, self.pending = self.pending[:n], self.pending[n:]
            return out
        out, self.pending = self.pending, b""
        return out + _recv_exact(self.sock, n - len(out))


def messages(url: str, *, headers: Mapping[str, str] | None = None, timeout: float = 30.0,
             read_timeout: float | None = None, context: ssl.SSLContext | None = None) -> Iterator[str]:
    """Text messages from ``url`` (``ws://`` / ``wss://``, or ``http(s)://`` meaning the same)
    until the server closes. ``timeout`` bounds connecting and the handshake; ``read_timeout``
    each wait for a message (None: as long as it takes, a job may be silent for hours)."""
    parts = urlsplit(url)
    secure = parts.scheme in ("wss", "https")
    port = parts.port or (443 if secure else 80)
    host = parts.hostname or "127.0.0.1"
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    sock: socket.socket = socket.create_connection((host, port), timeout=timeout)
    try:
        if secure:
            sock = (context or ssl.create_default_context()).wrap_socket(sock, server_hostname=host)
        reader = _Reader(sock, _handshake(sock, f"{host}:{port}", path, headers or {}))
        sock.settimeout(read_timeout)
        message = b""
        while True:
            b0, b1 = reader.read(2)
            opcode, length = b0 & 0x0F, b1 & 0x7F
            if length == 126:
                length = struct.unpack("!H", reader.read(2))[0]
            elif length == 127:
                length = struct.unpack("!Q", reader.read(8))[0]
            mask = reader.read(4) if b1 & 0x80 else b""
            payload = reader.read(length)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x8:  # close: answer it, done
                sock.sendall(_frame(0x8, payload[:2]))
                return
            if opcode == 0x9:  # ping
                sock.sendall(_frame(0xA, payload))
                continue
            if opcode == 0xA:  # pong
                continue
            message += payload
            if b0 & 0x80:  # FIN: the message is complete
                yield message.decode(errors="replace")
                message = b""
    finally:
        sock.close()
