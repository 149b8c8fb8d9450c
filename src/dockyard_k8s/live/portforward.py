"""``kubectl port-forward`` as a context manager: the launcher's client does not tunnel.

kubectl is found on PATH; asked for ``:REMOTE`` (no local port) it picks a free one and prints
``Forwarding from 127.0.0.1:PORT -> REMOTE`` once the tunnel is up. Leaving the ``with`` block,
or Ctrl-C, ends the kubectl process we started (and only that one).
"""

from __future__ import annotations

import contextlib
import queue
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator

from dockyard_k8s.errors import ClusterError
from dockyard_k8s.live import client as client_mod

_FORWARDING = re.compile(r"Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)")
# klog's header: E0612 12:00:00.000000   12345 memcache.go:265] ...
_KLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w.-]+:\d+\] ")


def kubectl_error(stderr: str) -> str:
    """kubectl's own error out of its stderr: klog lines (``memcache.go:265] couldn't get
    current server API group list ...``, repeated) are dropped when kubectl also printed a
    plain message; otherwise the last klog message is kept, without its header."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    plain = [line for line in lines if not _KLOG.match(line)]
    if plain:
        return "; ".join(dict.fromkeys(plain))
    return _KLOG.sub("", lines[-1]) if lines else ""


def kubectl_base(context: str | None = None, kubeconfig: str | None = None) -> list[str]:
    exe = shutil.which("kubectl")
    if not exe:
        raise ClusterError("kubectl not found on PATH",
                           hint="install kubectl (it does the port-forward and exec), or pass --address URL")
    cmd = [exe]
    if kubeconfig:
        cmd += ["--kubeconfig", kubeconfig]
    if context:
        cmd += ["--context", context]
    return cmd


@contextlib.contextmanager
def port_forward(namespace: str, target: str, remote_port: int, *, context: str | None = None,
                 kubeconfig: str | None = None, timeout: float = 30.0, checked: bool = False) -> Iterator[str]:
    """Yield ``http://127.0.0.1:PORT`` forwarding to ``target`` (``svc/name``) port ``remote_port``.

    Unless the caller has already sent a request with the same kubeconfig (``checked``), the
    launcher's client asks the API server's version first: a kubeconfig, credential plugin or
    server that does not work is said as every live command says it (located, exit 2), not
    through kubectl's stderr."""
    if not checked:
        with client_mod.connect(context=context, kubeconfig=kubeconfig) as client:
            client.version()
    cmd = [*kubectl_base(context, kubeconfig), "port-forward", "-n", namespace, "--address", "127.0.0.1", target,
           f":{remote_port}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    try:
        port = None
        while port is None:
            try:
                line = lines.get(timeout=timeout)
            except queue.Empty:
                raise ClusterError(f"kubectl port-forward to {target} did not start within {int(timeout)}s",
                                   obj=f"{namespace}/{target}") from None
            if line is None:
                err = kubectl_error(proc.stderr.read()) if proc.stderr else ""
                raise ClusterError(f"kubectl port-forward failed: {err or 'exited'}", obj=f"{namespace}/{target}",
                                   hint="is the head pod running? `dockyard-k8s status`")
            m = _FORWARDING.search(line)
            if m:
                port = int(m.group(1))
        yield f"http://127.0.0.1:{port}"
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()
