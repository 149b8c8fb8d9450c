"""``dockyard-k8s lint``: policy rules for GPU training runs and an untrusted-code sandbox.

Rules are data (:class:`~dockyard_k8s.lint.model.Rule`), one module per family under
``lint/rules/``, collected in ``lint/registry.py``. :func:`lint_objects` runs them over the
objects of a rendered run or of manifest files and returns a :class:`LintReport`:
findings (object, JSON path, file and line), suppressions, and the Pod Security
Standards level of every pod template (``lint/pss.py``).

The names below are imported on first use: ``check`` reads one rule (``sandbox-isolation``)
without paying for the manifest readers (PyYAML) the ``lint`` command needs.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> the module that defines it
_HOMES = {
    "LintReport": "engine", "PodSecurity": "engine", "lint_objects": "engine", "unknown_rules": "engine",
    "objects_from_bundle": "inputs", "read_manifests": "inputs",
    "Finding": "model", "LintConfig": "model", "Rule": "model",
    "BY_ID": "registry", "RULES": "registry",
}

__all__ = ["BY_ID", "RULES", "Finding", "LintConfig", "LintReport", "PodSecurity", "Rule", "lint_objects",
           "objects_from_bundle", "read_manifests", "unknown_rules"]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
