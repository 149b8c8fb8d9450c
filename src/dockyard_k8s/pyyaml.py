"""PyYAML, imported on first use (``check`` on a plain config does without it).

Both YAML readers build on PyYAML's C composer: ``config/yamlio.py`` types scalars as YAML
1.2 (the launcher's own files), ``validate/goyaml.py`` as kubectl's go-yaml v2 (manifests).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (plain.py says why)
if TYPE_CHECKING:
    from typing import Any
# The tag the composer gives every plain scalar without an explicit one: the reader resolves it.
PLAIN_TAG = "tag:dockyard-k8s,untagged"

_LOADERS: dict[str, Any] = {}  # made once (locating 500 documents made the class 500 times)


def safe_loader() -> Any:
    """PyYAML's C safe loader, or the Python one where libyaml is missing."""
    if "safe" not in _LOADERS:
        import yaml

        _LOADERS["safe"] = yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader
    return _LOADERS["safe"]


def compose_loader() -> Any:
    """The safe loader composing nodes with every plain scalar tagged :data:`PLAIN_TAG`."""
    if "compose" not in _LOADERS:

        class ComposeLoader(safe_loader()):  # type: ignore[misc]
            yaml_implicit_resolvers: dict[Any, Any] = {}  # noqa: RUF012 - PyYAML's class attribute
            DEFAULT_SCALAR_TAG = PLAIN_TAG

        _LOADERS["compose"] = ComposeLoader
    return _LOADERS["compose"]
