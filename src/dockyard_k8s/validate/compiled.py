"""Compiled validators: one per schema, built once, cached on disk, loaded lazily.

Two engines run the same converted schemas:

* **generated code** (default): ``fastjsonschema.compile_to_code`` turns a schema into a
  Python module; we compile that to a code object and cache it with ``marshal``. Loading
  a cached validator is a file read + ``marshal.loads`` + ``exec`` (~1 ms for a
  Deployment, a few ms for a RayJob), with no fastjsonschema import. Compiling a cache
  miss takes 0.1-2 s per kind, once.
* **jsonschema-rs** (optional, for bulk input): a Rust validator ~30x faster per object,
  but it must be built from the schema in every process (5-50 ms per kind) and imports in
  ~45 ms, so it only pays off for many objects of one kind (``BULK_THRESHOLD``).

Both are fast-fail yes/no gates; objects that fail are re-checked by :mod:`.collect`,
which lists every problem with its path.
"""

from __future__ import annotations

import marshal
import os
import sys
from collections.abc import Callable
from typing import Any

from dockyard_k8s.validate import cache

Gate = Callable[[Any], bool]  # True when the object is valid
BULK_THRESHOLD = 300  # objects of one kind before jsonschema-rs (if installed) is worth building
_GENERATOR = "fjs-1"
_IMPORT_LINE = "from fastjsonschema import JsonSchemaValueException, JsonSchemaValuesException"
_RUNTIME_LINE = "from dockyard_k8s.validate._runtime import JsonSchemaValueException, JsonSchemaValuesException"


# Gates built in this process, by (cache dir, schema key, bulk): keys are content hashes, so
# a gate stays right for its key; a large input validated in several parts builds each once.
_BUILT: dict[tuple[str, str, bool], Gate] = {}
_LOADED: dict[tuple[str, str], dict[str, Any]] = {}  # converted schemas read in this process, alike
# Where jsonschema-rs finds the errors of an object (JSON paths), per bulk gate built.
_WHERE: dict[tuple[str, str], Callable[[Any], list[tuple[str | int, ...]] | None]] = {}


class ValidatorCache:
    """Schemas and compiled validators under one cache root, memoised per process."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.dir = cache.layout_dir(root)
        self._gates: dict[str, Gate] = {}
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

    def gate(self, key: str, build: Callable[[], dict[str, Any]], count: int = 1) -> Gate:
        """A yes/no validator for ``key``; jsonschema-rs when ``count`` objects make it worth it."""
        gate = self._gates.get(key)
        if gate is None:
            bulk = count >= BULK_THRESHOLD
            gate = _BUILT.get((self.dir, key, bulk))
            if gate is None:
                gate = self._bulk_gate(key, build) if bulk else None
                if gate is None:
                    gate = self._code_gate(key, build)
                _BUILT[(self.dir, key, bulk)] = gate
            self._gates[key] = gate
        return gate

    def _bulk_gate(self, key: str, build: Callable[[], dict[str, Any]]) -> Gate | None:
        jsonschema_rs = import_jsonschema_rs()
        if jsonschema_rs is None:
            return None
        validator = jsonschema_rs.validator_for(self.schema(key, build))

        def gate(obj: Any) -> bool:
            try:
                return bool(validator.is_valid(obj))
            except Exception:  # data it cannot convert (a non-string key): the collector explains
                return False

        def where(obj: Any) -> list[tuple[str | int, ...]] | None:
            try:
                return [tuple(e.instance_path) for e in validator.iter_errors(obj)]
            except Exception:
                return None

        _WHERE[(self.dir, key)] = where
        return gate

    def error_paths(self, key: str) -> Callable[[Any], list[tuple[str | int, ...]] | None] | None:
        """For a key with a jsonschema-rs gate: where in an object its errors are (JSON paths),
        so the collector walks only there; None otherwise."""
        gate = self._gates.get(key)
        if gate is None or gate is not _BUILT.get((self.dir, key, True)):
            return None
        return _WHERE.get((self.dir, key))

    def _code_gate(self, key: str, build: Callable[[], dict[str, Any]]) -> Gate:
        path = os.path.join(self.dir, "code", f"{key}-{_GENERATOR}-{self._tag}.marshal")
        blob = cache.read_bytes(path)
        code = None
        if blob is not None:
            try:
                code = marshal.loads(blob)
            except (EOFError, ValueError, TypeError):  # truncated or from another Python: rebuild
                code = None
        if code is None:
            code = compile(self.generate(key, build), f"<validator {key}>", "exec")
            cache.write_atomic(path, marshal.dumps(code))
        namespace: dict[str, Any] = {"__name__": f"dockyard_k8s_validator_{key}"}
        exec(code, namespace)
        validate = namespace["validate"]

        def gate(obj: Any) -> bool:
            try:
                validate(obj)
            except ValueError:  # JsonSchemaValueException, or a schema regex the data trips on
                return False
            except (TypeError, RecursionError):
                return False
            return True

        return gate

    def generate(self, key: str, build: Callable[[], dict[str, Any]]) -> str:
        """Python source of the validator (fastjsonschema, fast-fail, no defaults, no formats)."""
        try:
            import fastjsonschema
        except ImportError as e:  # pragma: no cover - a declared dependency
            from dockyard_k8s.errors import UsageError

            raise UsageError("validating needs the fastjsonschema package: pip install fastjsonschema") from e
        schema = dict(self.schema(key, build))
        schema["$schema"] = "http://json-schema.org/draft-07/schema#"
        source: str = fastjsonschema.compile_to_code(schema, use_default=False, use_formats=False,
                                                     detailed_exceptions=False)
        if _IMPORT_LINE in source:
            source = source.replace(_IMPORT_LINE, _RUNTIME_LINE, 1)
        return source

    def cached_code_count(self) -> int:
        """How many compiled validators the cache holds (for ``schemas list``)."""
        try:
            return sum(1 for f in os.listdir(os.path.join(self.dir, "code")) if f.endswith(".marshal"))
        except OSError:
            return 0


def import_jsonschema_rs() -> Any:
    """jsonschema-rs, or None when it is not installed, imported ~20 ms faster.

    Its module set-up records its build date with one call of
    ``email.utils.parsedate_to_datetime``, and importing the ``email`` package is most of the
    cost of importing jsonschema-rs (a 10,000-object ``validate`` pays it before its workers
    start). During that import, ``email.utils`` is a stand-in (:mod:`._email_utils`) that
    parses RFC 2822 dates the same way and fetches the real module for anything else; the
    real one is what any later import gets.
    """
    if "jsonschema_rs" in sys.modules:
        return sys.modules["jsonschema_rs"]
    from dockyard_k8s.validate import _email_utils

    stand_in = "email.utils" not in sys.modules
    if stand_in:
        sys.modules["email.utils"] = _email_utils
    try:
        import jsonschema_rs  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    finally:
        if stand_in and sys.modules.get("email.utils") is _email_utils:
            del sys.modules["email.utils"]
    return jsonschema_rs


__all__ = ["BULK_THRESHOLD", "Gate", "ValidatorCache", "import_jsonschema_rs"]
