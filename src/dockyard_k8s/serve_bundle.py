"""An endpoint's bundle: resolve the serve spec, render the objects, check them, fail closed.

What ``serve render`` prints is exactly what ``serve up`` applies: every serve command that
needs the objects goes through :func:`build_serve_bundle`, as run commands go through
``bundle.build_bundle``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dockyard_k8s.config.loader import Layers
from dockyard_k8s.config.serve import ServeConfig, load_serve
from dockyard_k8s.errors import ManifestError
from dockyard_k8s.render.serve import render_serve
from dockyard_k8s.validate.engine import ValidateOptions, validate_report
from dockyard_k8s.validate.problem import Report


@dataclass(frozen=True, slots=True)
class ServeBundle:
    config: ServeConfig
    objects: list[dict[str, Any]]
    validation: Report  # what the rendered objects were checked against


def build_serve_bundle(spec_file: str, layers: Layers = Layers()) -> ServeBundle:
    """Load, render and validate an endpoint.

    Raises:
        ConfigError: bad input, located at the key.
        ManifestError: a rendered object fails offline validation against the Kubernetes
            schemas or the bundled KEDA CRDs (a renderer bug never reaches a cluster).
    """
    config = load_serve(spec_file, layers)
    objects = render_serve(config)

    report = validate_report(objects, ValidateOptions(ignore_missing_schemas=True))
    if report.problems:
        raise ManifestError([str(p) for p in report.problems])
    return ServeBundle(config, objects, report)
