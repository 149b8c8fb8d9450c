"""The on-disk cache of converted schemas and compiled validators.

Layout under ``$XDG_CACHE_HOME/dockyard-k8s`` (``~/.cache/dockyard-k8s``)::

    v1/schemas/<key>.json            a converted, self-contained JSON schema
    v1/code/<key>-<tag>.marshal      its fastjsonschema validator, compiled to a code object
    v1/builtin/<kv>-<dir>.marshal    apiVersion/Kind -> definition name, per schema set
    v1/crd-files.marshal             CRD file stat -> content hash + the kinds it defines
    crds/kuberay/                    CRDs downloaded by ``dockyard-k8s schemas fetch``

Keys are content hashes (of the schema's source plus the converter version), so a
changed CRD file or a new kubernetes-validate release never reuses a stale validator.
Small indexes are ``marshal`` files and ``json``/``hashlib`` are imported only on a miss:
on this class of machine each of those imports costs more than reading the index.
Every write is atomic (temp file + rename): concurrent runs are safe, and a cache that
cannot be written only costs speed, never correctness.
"""

from __future__ import annotations

import json
import marshal
import os
from collections.abc import Mapping
from typing import Any

LAYOUT = "v1"


def cache_root(env: Mapping[str, str] | None = None) -> str:
    """``$XDG_CACHE_HOME/dockyard-k8s``, or ``~/.cache/dockyard-k8s``."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "dockyard-k8s")


def layout_dir(root: str) -> str:
    return os.path.join(root, LAYOUT)


def digest(*parts: str | bytes) -> str:
    """A short, stable content key."""
    import hashlib  # stdlib, but with tempfile ~10 ms a warm `check` (a cache hit) never needs

    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()[:32]


def write_atomic(path: str, data: bytes) -> bool:
    """Write ``data`` to ``path`` atomically; False (and nothing written) if the cache is not writable."""
    import tempfile  # a cache miss only (see digest)

    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return False
    return True


def read_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def read_json(path: str) -> Any:
    data = read_bytes(path)
    try:
        return None if data is None else json.loads(data)
    except ValueError:  # a truncated or foreign file: treat as a miss, it will be rewritten
        return None


def write_json(path: str, value: Any) -> bool:
    return write_atomic(path, json.dumps(value, separators=(",", ":"), sort_keys=True).encode())


def read_marshal(path: str) -> Any:
    """What :func:`write_marshal` wrote (a small index, a compiled validator), or None."""
    data = read_bytes(path)
    try:
        return None if data is None else marshal.loads(data)
    except (EOFError, ValueError, TypeError):  # truncated, or written by another Python: a miss
        return None


def write_marshal(path: str, value: Any) -> bool:
    return write_atomic(path, marshal.dumps(value))
