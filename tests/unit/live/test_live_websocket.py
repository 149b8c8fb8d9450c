"""`job logs -f` follows the dashboard's logs/tail WebSocket (each part of the log once),
and falls back to polling the whole log, yielding only its new part, where it is not served."""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import pytest

from dockyard_k8s.live import websocket
from dockyard_k8s.live.rayhead import RayJobsClient

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def frame(opcode: int, payload: bytes, fin: bool = True) -> bytes:
    head = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([n])
    elif n < 1 << 16:
        head += bytes([126]) + struct.pack("!H", n)
    else:
        head += bytes([127]) + struct.pack("!Q", n)
    return head + payload


class Dashboard(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    tail = True
    log_text: ClassVar[list[str]] = ["line 1\n", "line 2\n" + "x" * 300 + "\n"]
    requests: ClassVar[list[str]] = []
    pongs: ClassVar[list[bytes]] = []
    polls = 0

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, doc: Any) -> None:
        body = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        type(self).requests.append(self.path)
        if self.path.endswith("/logs/tail"):
            if not self.tail:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            accept = base64.b64encode(hashlib.sha1((self.headers["Sec-WebSocket-Key"] + GUID).encode()).digest())
            self.wfile.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                             b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
            self.wfile.write(frame(0x1, b"line 1\n"))
            self.wfile.write(frame(0x9, b"hi"))  # a ping: the client answers with a masked pong
            self.wfile.write(frame(0x1, b"line 2\n", fin=False) + frame(0x0, b"x" * 300 + b"\n"))
            self.wfile.flush()
            _, b1 = self.rfile.read(2)
            mask = self.rfile.read(4)
            type(self).pongs.append(bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(b1 & 0x7F))))
            self.wfile.write(frame(0x8, struct.pack("!H", 1000)))
            self.wfile.flush()
            self.close_connection = True
            return
        if self.path.endswith("/logs"):
            type(self).polls += 1
            self._json({"logs": "".join(self.log_text[:type(self).polls])})
            return
        done = type(self).polls >= len(self.log_text) or self.tail
        self._json({"submission_id": "j", "status": "SUCCEEDED" if done else "RUNNING"})


@contextmanager
def dashboard(tail: bool) -> Iterator[str]:
    handler = type("H", (Dashboard,), {"tail": tail, "requests": [], "pongs": [], "polls": 0})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
    dashboard.handler = handler  # type: ignore[attr-defined]


def test_follow_logs_uses_the_tail_websocket() -> None:
    with dashboard(tail=True) as url:
        ray = RayJobsClient(url, sleep=lambda s: None)
        chunks = list(ray.follow_logs("j"))
        ray.close()
    handler = dashboard.handler  # type: ignore[attr-defined]
    assert chunks == ["line 1\n", "line 2\n" + "x" * 300 + "\n"]  # fragmented message joined, 16-bit length
    assert handler.pongs == [b"hi"]
    assert not any(p.endswith("/logs") for p in handler.requests)  # the whole log was never downloaded


def test_follow_logs_polls_only_where_the_tail_is_not_served() -> None:
    with dashboard(tail=False) as url:
        ray = RayJobsClient(url, sleep=lambda s: None)
        chunks = list(ray.follow_logs("j"))
        ray.close()
    assert chunks == ["line 1\n", "line 2\n" + "x" * 300 + "\n"]  # each part once


def test_no_upgrade_is_an_error_with_the_status() -> None:
    with dashboard(tail=False) as url, pytest.raises(websocket.WebSocketError) as e:
        list(websocket.messages(f"{url}/api/jobs/j/logs/tail"))
    assert e.value.status == 404
