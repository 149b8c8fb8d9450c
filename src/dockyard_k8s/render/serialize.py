"""Deterministic text forms of rendered objects: the same objects give the same bytes.

Key order is the order the renderers build (apiVersion, kind, metadata, spec...), never
sorted alphabetically; multi-line strings are block literals so scripts stay readable.
PyYAML's dumper quotes every string a YAML 1.1 reader would re-type (``'no'``,
``'0755'``), so kubectl reads back exactly what we rendered. A value the renderers share
between two places (one selector dict used by two policies) is written out in full each
time, never as a YAML anchor and alias (``&id001`` / ``*id001``): readers of a manifest,
and tools that do not resolve aliases, see each object whole.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (plain.py says why)
if TYPE_CHECKING:
    from typing import Any
_Dumper: Any = None  # PyYAML's dumper with our str representer, built on first use


def _pyyaml_dumper() -> Any:
    """Importing PyYAML is a large part of ``check``'s start-up: only when needed."""
    global _Dumper
    if _Dumper is None:
        import yaml

        base = yaml.CSafeDumper if hasattr(yaml, "CSafeDumper") else yaml.SafeDumper

        class Dumper(base):  # type: ignore[misc,valid-type]
            def ignore_aliases(self, data: Any) -> bool:
                return True  # no anchors/aliases: a shared value is written in full each time

        def represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
            style = "|" if "\n" in value else None
            return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

        Dumper.add_representer(str, represent_str)
        _Dumper = Dumper
    return _Dumper


def dump_yaml(data: Any) -> str:
    """One YAML document."""
    text = _fast_dump(data)
    if text is not None:
        return text
    import yaml

    return yaml.dump(data, Dumper=_pyyaml_dumper(), sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=4096)


# --- the common case without PyYAML ----------------------------------------------------
# A recipe is a few nested mappings of names, numbers and booleans; rendering it for the
# recipe ConfigMap is the only reason `check` and `render` would import PyYAML. For such
# data we write exactly the bytes PyYAML's block style writes; anything else (multi-line,
# non-ASCII or quoted strings, lists of lists, other types) goes to PyYAML. The property
# test in tests/unit/render/test_serialize.py holds the two to the same bytes.

# Strings PyYAML writes plain: they start with a letter, '_' or '/' (no resolver of YAML 1.1
# numbers, dates, '~', '<<' or '=' starts so), hold no indicator that matters in block
# context ('#', quotes, ': ', a trailing ':'), no leading/trailing space, no line break...
_PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_./:@=+ -]*")
# ...and are not one of the YAML 1.1 boolean or null words.
_RESERVED = frozenset(
    w for word in ("yes", "no", "true", "false", "on", "off", "null") for w in (word, word.title(), word.upper())
)
_PLAIN_MAX = 1000  # far below the width (4096) at which PyYAML would fold a long plain scalar


def _scalar(value: Any) -> str | None:
    """The plain text PyYAML writes for a scalar, or None when it might do otherwise."""
    cls = value.__class__
    if cls is str:
        if (len(value) > _PLAIN_MAX or not _PLAIN.fullmatch(value) or value in _RESERVED
                or value.endswith((" ", ":")) or ": " in value):
            return None
        return value  # type: ignore[no-any-return]
    if cls is bool:
        return "true" if value else "false"
    if cls is int:
        return str(value)
    if cls is float:
        if value != value:
            return ".nan"
        if value in (float("inf"), float("-inf")):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value).lower()
        return text.replace("e", ".0e", 1) if "." not in text and "e" in text else text
    if value is None:
        return "null"
    return None


def _fast_dump(data: Any) -> str | None:
    if data.__class__ is not dict:
        return None
    if not data:
        return "{}\n"
    out: list[str] = []
    return "".join(out) if _mapping(data, "", "", out) else None


def _mapping(data: dict[Any, Any], first: str, indent: str, out: list[str]) -> bool:
    """Block mapping lines; ``first`` prefixes the first key (``"- "`` in a sequence)."""
    lead = first
    for key, value in data.items():
        if key.__class__ is not str or len(key) > 128 or _scalar(key) is None:  # 128: PyYAML's simple keys
            return False
        if value.__class__ is dict and value:
            out.append(f"{lead}{key}:\n")
            if not _mapping(value, indent + "  ", indent + "  ", out):
                return False
        elif value.__class__ is list and value:
            out.append(f"{lead}{key}:\n")
            if not _sequence(value, indent, out):  # PyYAML does not indent a sequence in a mapping
                return False
        else:
            text = _empty(value)
            if text is None:
                return False
            out.append(f"{lead}{key}: {text}\n")
        lead = indent
    return True


def _sequence(data: list[Any], indent: str, out: list[str]) -> bool:
    for item in data:
        if item.__class__ is dict and item:
            if not _mapping(item, indent + "- ", indent + "  ", out):
                return False
        elif item.__class__ is list and item:
            return False
        else:
            text = _empty(item)
            if text is None:
                return False
            out.append(f"{indent}- {text}\n")
    return True


def _empty(value: Any) -> str | None:
    """A scalar's text, or the flow form PyYAML gives empty collections."""
    if value.__class__ is dict:
        return "{}"
    if value.__class__ is list:
        return "[]"
    return _scalar(value)


def dump_documents(objects: list[dict[str, Any]]) -> str:
    """A multi-document YAML stream, ``---`` before each document (kubectl-friendly)."""
    return "".join("---\n" + dump_yaml(o) for o in objects)


def dump_json(data: Any) -> str:
    import json  # not on the start-up path of check/render's default YAML output

    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def as_list(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """A ``v1 List`` wrapping the objects: what ``kubectl apply -f`` takes as one JSON file."""
    return {"apiVersion": "v1", "kind": "List", "items": objects}


def object_file_name(index: int, obj: dict[str, Any], ext: str) -> str:
    """``NN-kind-name.ext``: the file ``render -o DIR`` writes an object to (lint points there)."""
    return f"{index:02d}-{str(obj.get('kind', '')).lower()}-{(obj.get('metadata') or {}).get('name', '')}.{ext}"
