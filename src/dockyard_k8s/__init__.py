"""dockyard-k8s: recipe + infra spec -> a validated KubeRay GPU run with a hardened sandbox pool.

The public surface is small: load a run, render it, and the error types.
"""

from dockyard_k8s.errors import ClusterError, ConfigError, DockyardError, ManifestError, UsageError

__version__ = "0.1.0"

__all__ = ["ClusterError", "ConfigError", "DockyardError", "ManifestError", "UsageError", "__version__"]
