"""Helpers of the live flow tests: a controller thread beside the CLI, and ordering on what
the CLI printed (never sleeps)."""

from __future__ import annotations

import threading
from typing import Any

from fakekube import SAFETY_TIMEOUT, FakeKube

from support.cli import printed

# What the examples' pods name and a real cluster's admin creates before the first run: `run` and
# `serve up` refuse to apply while one is missing (live/references.py).
PREREQUISITES: list[dict[str, Any]] = [
    *({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": 1000}
      for n in ("gpu-training",)),
    {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"}, "handler": "nvidia"},
    # the kind profile's claim class (kind's local-path provisioner serves it as "standard")
    {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "standard"},
     "provisioner": "rancher.io/local-path"},
    *({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": n, "namespace": "rl-research"}}
      for n in ("ghcr-pull", "wandb")),
    *({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hf-token", "namespace": ns}}
      for ns in ("llama", "inference")),
    *({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "fsx-claim", "namespace": ns},
       "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Ti"}}}}
      for ns in ("rl-research", "inference")),  # the eks profile's FSx claim
]


def seed(fake: FakeKube) -> FakeKube:
    """The fake with :data:`PREREQUISITES` in it (a test of a missing one removes it)."""
    for obj in PREREQUISITES:
        fake.put(obj)
    return fake


def in_background(fn: Any) -> threading.Thread:
    """Run ``fn`` (a controller's part) in a thread; its exceptions land in ``thread.errors``."""
    errors: list[BaseException] = []

    def body() -> None:
        try:
            fn()
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=body, daemon=True)
    t.errors = errors  # type: ignore[attr-defined]
    t.start()
    return t


def wait_output(fake: FakeKube, text: str, timeout: float = SAFETY_TIMEOUT) -> None:
    """Until the CLI printed ``text``: orders what a test does after something the CLI saw."""
    fake.wait_for(lambda: text in printed(), timeout)


def wait_following(fake: FakeKube, *plurals: str) -> None:
    """The CLI has its watches open (rayjobs, pods, events by default)."""
    for plural in plurals or ("rayjobs", "pods", "events"):
        fake.wait_watching(plural)
