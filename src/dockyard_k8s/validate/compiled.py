"""Compiled validators: one per schema, built once, cached on disk, loaded lazily.

``fastjsonschema.compile_to_code`` turns a converted schema into a Python module; we compile
that to a code object and cache it with ``marshal``. Loading a cached validator is a file
read + ``marshal.loads`` + ``exec`` (no fastjsonschema import); a cache miss is compiled
once (seconds for a large CRD). A validator is a fast-fail yes/no gate: objects that fail are walked
by :mod:`.collect`, which lists every problem with its path (a differential test holds the
two to the same verdict).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from dockyard_k8s.errors import UsageError
from dockyard_k8s.validate import cache

Gate = Callable[[Any], bool]  # True when the object is valid

_GENERATOR = "fjs-3"  # part of every cached validator's file name: bump it when generate() changes
# The generated code imports its exception from fastjsonschema, whose import (it pulls in urllib.request)
# costs more than loading a cached validator: the line goes, and the code raises ValueError in its place
# (without detailed exceptions it only ever constructs one from a message).
_IMPORT_LINE = "from fastjsonschema import JsonSchemaValueException, JsonSchemaValuesException\n"
_STAND_INS = {"JsonSchemaValueException": ValueError, "JsonSchemaValuesException": ValueError}


# Gates built and schemas read in this process, by (cache dir, schema key): keys are content
# hashes, so either stays right for its key across runs in one process (tests, lint + check).
_BUILT: dict[tuple[str, str], Gate] = {}
_LOADED: dict[tuple[str, str], dict[str, Any]] = {}


class ValidatorCache:
    """Schemas and compiled validators under one cache root, memoised per process."""

    def __init__(self, root: str) -> None:
        self.dir = cache.layout_dir(root)
        self._tag = sys.implementation.cache_tag or "py"

    def schema(self, key: str, build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The converted schema for ``key`` (from memory, disk, or ``build()``, then stored)."""
        found = _LOADED.get((self.dir, key))
        if found is None:
            path = os.path.join(self.dir, "schemas", f"{key}.json")
            found = cache.read_json(path)
            if not isinstance(found, dict):
                found = build()
                cache.write_json(path, found)
            _LOADED[(self.dir, key)] = found
        return found

    def gate(self, key: str, build: Callable[[], dict[str, Any]]) -> Gate:
        """A yes/no validator for ``key`` (from this process, the disk cache, or compiled now)."""
        gate = _BUILT.get((self.dir, key))
        if gate is None:
            gate = _BUILT[(self.dir, key)] = self._code_gate(key, build)
        return gate

    def _code_gate(self, key: str, build: Callable[[], dict[str, Any]]) -> Gate:
        path = os.path.join(self.dir, "code", f"{key}-{_GENERATOR}-{self._tag}.marshal")
        code = cache.read_marshal(path)  # None: missing, truncated or from another Python: rebuild
        if code is None:
            code = compile(self.generate(key, build), f"<validator {key}>", "exec")
            cache.write_marshal(path, code)
        namespace: dict[str, Any] = {"__name__": f"dockyard_k8s_validator_{key}", **_STAND_INS}
        exec(code, namespace)
        validate = namespace["validate"]

        def gate(obj: Any) -> bool:
            try:
                validate(obj)
            except (ValueError, TypeError, RecursionError):  # a violation, or data a schema regex trips on
                return False
            return True

        return gate

    def generate(self, key: str, build: Callable[[], dict[str, Any]]) -> str:
        """Python source of the validator (fastjsonschema, fast-fail, no defaults, no formats)."""
        try:
            import fastjsonschema
        except ImportError as e:  # pragma: no cover - a declared dependency

            raise UsageError("validating needs the fastjsonschema package: pip install fastjsonschema") from e
        schema = dict(self.schema(key, build))
        schema["$schema"] = "http://json-schema.org/draft-07/schema#"
        source: str = fastjsonschema.compile_to_code(schema, use_default=False, use_formats=False,
                                                     detailed_exceptions=False)
        source = source.replace(_IMPORT_LINE, "", 1)
        # The generated code names each array item it descends into for its error messages,
        # `"...[{data__x}]".format(**locals())`: a dict of every local per item, most of the
        # gate's time on a pod spec. A gate only answers yes or no (the collector says where),
        # so the names stay unformatted.
        return source.replace(".format(**locals())", "")

    def cached_code_count(self) -> int:
        """How many compiled validators the cache holds (for ``schemas list``)."""
        try:
            return sum(1 for f in os.listdir(os.path.join(self.dir, "code")) if f.endswith(".marshal"))
        except OSError:
            return 0
