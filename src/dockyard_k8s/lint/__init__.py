"""``dockyard-k8s lint``: policy rules for GPU training runs and an untrusted-code sandbox.

    model.py     Rule, Finding, the object under lint (Obj, its pods) and LintConfig: plain data
    rules/       one module per rule family; registry.py collects them (RULES, BY_ID)
    engine.py    lint_objects: rules over objects (``manifests.py`` reads them) -> LintReport
    pss.py       the Pod Security Standards level of every pod template
    reach.py     who can reach whom through the rendered NetworkPolicies
    isolation.py what the untrusted pods may reach (Exposure): sandbox-isolation and check's warnings
    entries.py   public ways into pods (LoadBalancer/NodePort, KubeRay's head Service and Ingress, Ingress)
    output.py    text, JSON and SARIF

The names below are imported on first use: ``check`` imports ``isolation.py`` (and
``reach.py``) alone, without what the ``lint`` command needs.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> the module that defines it
_HOMES = {
    "LintReport": "engine", "PodSecurity": "engine", "lint_objects": "engine", "unknown_rules": "engine",
    "Finding": "model", "LintConfig": "model", "Rule": "model",
    "BY_ID": "registry", "RULES": "registry",
}

__all__ = ["BY_ID", "RULES", "Finding", "LintConfig", "LintReport", "PodSecurity", "Rule", "lint_objects",
           "unknown_rules"]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
