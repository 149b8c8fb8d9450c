"""Serve a FakeKube on 127.0.0.1 over plain HTTP, so real clients (kubectl) talk to it.

Each request becomes an ``httpx2.Request`` handed to the fake's transport; streamed
answers (watches, ``logs -f``) go out with chunked transfer encoding as they are produced,
and a client that hangs up closes the stream.
"""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx2
from fake_streams import Stream
from fakekube import FakeKube


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeKube

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        # headers and body go out in separate writes: without this, delayed ACKs add ~40 ms a request
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if not size:
                    self.rfile.readline()  # the blank line after the last chunk
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        body = self._body()
        headers = [(k, v) for k, v in self.headers.items() if k.lower() != "transfer-encoding"]
        request = httpx2.Request(self.command, f"http://{self.headers.get('Host', '127.0.0.1')}{self.path}",
                                 headers=headers, content=body)
        try:
            resp = self.fake.handle_request(request)
        except httpx2.TransportError:  # an injected connection reset
            self.close_connection = True
            return
        self.send_response(resp.status_code)
        stream = resp.stream if isinstance(resp.stream, Stream) else None
        for key, value in resp.headers.multi_items():
            if key.lower() not in ("content-length", "transfer-encoding"):
                self.send_header(key, value)
        if stream is None:
            content = resp.read()
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for chunk in stream:
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            stream.close()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


@contextlib.contextmanager
def serve(fake: FakeKube) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` answering with ``fake`` until the block ends."""
    handler = type("Handler", (_Handler,), {"fake": fake})
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True, name="fakekube-http")
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        fake.drop_watches()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def write_kubeconfig(path: Path, url: str, *, namespace: str = "default", token: str = "fake-token") -> Path:
    path.write_text(f"""apiVersion: v1
kind: Config
current-context: fake
contexts:
- name: fake
  context: {{cluster: fake, user: me, namespace: {namespace}}}
clusters:
- name: fake
  cluster: {{server: "{url}"}}
users:
- name: me
  user: {{token: {token}}}
""")
    return path
