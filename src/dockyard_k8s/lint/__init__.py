"""``dockyard-k8s lint``: policy rules for GPU training runs and an untrusted-code sandbox.

Rules are data (:class:`~dockyard_k8s.lint.model.Rule`), one module per family under
``lint/rules/``, collected in ``lint/registry.py``. :func:`lint_objects` runs them over the
objects of a rendered run or of manifest files and returns a :class:`LintReport`:
findings (object, JSON path, file and line), suppressions, and the Pod Security
Standards level of every pod template (``lint/pss.py``).
"""

from dockyard_k8s.lint.engine import LintReport, PodSecurity, lint_objects, unknown_rules
from dockyard_k8s.lint.inputs import objects_from_bundle, read_manifests
from dockyard_k8s.lint.model import Finding, LintConfig, Rule
from dockyard_k8s.lint.registry import BY_ID, RULES

__all__ = ["BY_ID", "RULES", "Finding", "LintConfig", "LintReport", "PodSecurity", "Rule", "lint_objects",
           "objects_from_bundle", "read_manifests", "unknown_rules"]
