"""``dockyard-k8s schemas fetch``: download a KubeRay release's CRDs into the user cache.

The files come from the release tag on GitHub (raw content), or from ``--from`` (another base
URL, a local directory or a ``file://`` URL: an air-gapped mirror), are checked to be
CustomResourceDefinitions of group ``ray.io``, then replace ``<cache>/crds/kuberay/``
atomically and are converted right away, so the next ``validate``/``check`` only loads.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request

from dockyard_k8s.errors import DockyardError, UsageError
from dockyard_k8s.validate import cache
from dockyard_k8s.validate.crd import fetched_dir
from dockyard_k8s.validate.crd_convert import crd_schemas_of

KUBERAY_URL = "https://raw.githubusercontent.com/ray-project/kuberay/{version}/ray-operator/config/crd/bases"
KUBERAY_FILES = ("ray.io_rayclusters.yaml", "ray.io_rayjobs.yaml", "ray.io_rayservices.yaml")
KUBERAY_OPTIONAL = ("ray.io_raycronjobs.yaml",)  # v1.7.0+ only
TIMEOUT = 30.0


def normalize_version(text: str) -> str:
    m = re.fullmatch(r"v?(\d+\.\d+\.\d+(?:-rc\.?\d+)?)", text.strip())
    if not m:
        raise UsageError(f"--kuberay {text!r}: expected a release such as v1.7.0")
    return f"v{m.group(1)}"


def _local(url: str) -> str | None:
    """The file a ``--from`` location names when it is local (a path, or a ``file://`` URL)."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        return urllib.parse.unquote(parsed.path)
    if not parsed.scheme or len(parsed.scheme) == 1:  # a path (C:\... has a one-letter "scheme")
        return os.path.expanduser(url)
    return None


def _get(url: str) -> bytes | None:
    """The body, None when it does not exist (HTTP 404, no such file); DockyardError on any other failure."""
    path = _local(url)
    if path is not None:
        try:
            with open(path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise DockyardError(f"cannot read {path}: {e.strerror or e}") from e

    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
            data: bytes = response.read()
            return data
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise DockyardError(f"download failed: {url}: HTTP {e.code}") from e
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise DockyardError(f"download failed: {url}: {reason} (offline? the bundled KubeRay CRDs still work)") from e


def fetch_kuberay(version: str, *, root: str | None = None, base_url: str = KUBERAY_URL) -> list[str]:
    """Download the CRDs of KubeRay ``version``; returns the ``group/version/Kind`` they define.

    Raises:
        UsageError: a malformed version, or one upstream does not have (404).
        DockyardError: network failure or content that is not a ray.io CRD (exit 1).
    """
    version = normalize_version(version)
    root = root or cache.cache_root()
    base = base_url.format(version=version).rstrip("/")
    local = _local(base)
    if local is not None and not os.path.isdir(local):
        raise UsageError(f"--from {base_url}: {local} is not a directory (expected a directory holding the CRD "
                         f"files {', '.join(KUBERAY_FILES)}; {{version}} is replaced by {version})")
    target = os.path.join(fetched_dir(root), "kuberay")
    os.makedirs(fetched_dir(root), exist_ok=True)
    staging = tempfile.mkdtemp(dir=fetched_dir(root), prefix=".fetch-")
    kinds: list[str] = []
    try:
        for name in (*KUBERAY_FILES, *KUBERAY_OPTIONAL):
            data = _get(f"{base}/{name}")
            if data is None:
                if name in KUBERAY_OPTIONAL:
                    continue
                why = (f"the mirror needs {', '.join(KUBERAY_FILES)}" if local is not None else
                       f"is {version} a KubeRay release?")
                raise UsageError(f"--kuberay {version}: {base}/{name} not found ({why})")
            try:
                schemas = crd_schemas_of(data.decode("utf-8"), f"{base}/{name}")
            except (UsageError, UnicodeDecodeError) as e:
                raise DockyardError(f"{base}/{name}: not a CRD file ({e})") from e
            if not schemas or not all(k.startswith("ray.io/") for k in schemas):
                raise DockyardError(f"{base}/{name}: expected ray.io CustomResourceDefinitions")
            kinds += schemas
            with open(os.path.join(staging, name), "wb") as f:
                f.write(data)
        with open(os.path.join(staging, "VERSION"), "w", encoding="utf-8") as f:
            f.write(f"KubeRay {version}\n")
        old = target + ".old"
        shutil.rmtree(old, ignore_errors=True)
        if os.path.exists(target):
            os.replace(target, old)
        os.replace(staging, target)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return sorted(kinds)
