"""A recipe file -> one resolved mapping: its ``defaults:`` list composed, Hydra style.

The launcher does not interpret a recipe, but it composes one the way Hydra composes a
primary config, so the mounted recipe is what the trainer would have built:

* ``defaults: base/common.yaml`` (a string) or a list entry ending in ``.yaml``/``.yml``: that
  file, relative to the containing file, merged at the top level (dockyard-k8s' own form);
* ``- base/common`` (Hydra's CONFIG): the config ``base/common.yaml``, placed at its package
  (by default its config group, ``base``, as Hydra >= 1.1 does; ``# @package _global_`` in the
  file or ``- base/common@_global_`` puts it at the top level);
* ``- model: qwen3_32b`` (a GROUP_DEFAULT): ``model/qwen3_32b.yaml`` at package ``model``;
  ``model@policy: qwen3_32b`` places it at ``policy``; ``optional model: x`` skips a missing
  option; ``model: null`` skips the entry; ``model: [a, b]`` takes both;
  ``override model: large`` replaces the option a config it includes chose;
* ``_self_``: where the file's own keys go in the order (last when not listed: they win).

Config groups are relative to the containing config's group (``/group`` from the recipe's
directory). A config's own ``# @package`` header (``_global_``, ``_group_``, ``_name_``, dotted
names) is honoured. Not supported (an error at the entry): Hydra's ``hydra/`` groups, config
search paths, structured configs, and OmegaConf ``${...}`` interpolation (``${VAR}`` is an
environment variable here, as in infra files). The command-line group choice ``model=small``
is refused at the override (:meth:`RecipeComposer.group_of` knows the groups): write it in the
defaults list.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from dockyard_k8s.config.layering import LayerReader, find_file, merge_docs
from dockyard_k8s.config.yamlio import Document, Path
from dockyard_k8s.plain import show_typed

_PACKAGE_HEADER = re.compile(r"^\s*#\s*@package\s+(\S+)", re.MULTILINE)
_SELF = "_self_"


@dataclass(frozen=True, slots=True)
class _Entry:
    kind: str  # "self" | "file" | "config" | "group" | "override"
    path: str  # a file (kind file) or a config path below the root, without extension
    package: str | None  # dotted package, "" for the top level, None: the config's default
    optional: bool
    at: Path  # where the entry is written in ``doc``
    doc: Document  # the config the entry is written in
    directory: str  # that config's directory
    group: str = ""  # GROUP[@PACKAGE] of a group default: what an ``override`` names


class RecipeComposer:
    """Composes a recipe; problems and the files read go to ``reader``, remarks to ``notes``."""

    def __init__(self, reader: LayerReader, recipe_file: str) -> None:
        self.reader = reader
        self.root = os.path.dirname(os.path.abspath(recipe_file))
        self.notes: list[str] = []
        self._used: set[str] = set()  # groups whose option an override replaced
        self.groups: set[str] = set()  # config groups the defaults lists choose an option of

    def compose(self, file: str) -> Document:
        """The recipe ``file`` with its defaults list composed."""
        return self._compose(file, group="", package="", stack=(), overrides={})

    def _compose(self, file: str, *, group: str, package: str, stack: tuple[str, ...],
                 overrides: dict[str, str]) -> Document:
        doc = self.reader.read(file)
        if doc is None:
            return Document({})
        raw = doc.data.pop("defaults", None)
        own = _place(doc, package)
        if raw is None:
            self.reader.files.append(file)
            return own
        entries = self._entries(doc, raw, group, os.path.dirname(file))
        # `override g: x` in this list replaces the option the configs it includes choose for g;
        # an ancestor's override wins over this config's (Hydra: the primary config decides).
        mine = {e.group: e for e in entries if e.kind == "override"}
        choices = {**{g: e.path for g, e in mine.items()}, **overrides}
        if not any(e.kind == "self" for e in entries):
            entries.append(_Entry("self", "", None, False, ("defaults",), doc, ""))
        real = os.path.realpath(file)
        merged = Document({})
        for e in entries:
            if e.kind == "self":
                merged = merge_docs(merged, own)
                continue
            if e.kind == "override":
                continue
            path = e.path
            if e.kind == "group" and e.group in choices:
                self._used.add(e.group)
                path = choices[e.group]
            target = self._target(e, path)
            if target is None:
                continue
            if os.path.realpath(target) in (*stack, real):
                chain = " -> ".join([*stack, real, os.path.realpath(target)])
                self.reader.problem(doc, e.at, f"defaults cycle: {chain}")
                continue
            child_group = _group_of(self.root, target) if e.kind == "file" else os.path.dirname(path)
            merged = merge_docs(merged, self._compose(target, group=child_group,
                                                      package=self._package(e, target, path, package),
                                                      stack=(*stack, real), overrides=choices))
        for name, e in mine.items():
            if name not in self._used and name not in overrides:
                self.reader.problem(doc, e.at, f"override {name}: no config included here chooses a "
                                               f"{name!r} option to override")
        self.reader.files.append(file)
        return merged

    def _entries(self, doc: Document, raw: Any, group: str, directory: str) -> list[_Entry]:
        items = [raw] if isinstance(raw, str) else raw
        if not isinstance(items, list):
            self.reader.problem(doc, ("defaults",), f"got {show_typed(raw)}, expected a file name or a "
                                                    "Hydra defaults list")
            return []
        out: list[_Entry] = []
        for i, item in enumerate(items):
            at: Path = ("defaults", i) if isinstance(raw, list) else ("defaults",)
            if isinstance(item, str):
                out += self._string_entry(item, group, at, doc, directory)
            elif isinstance(item, dict) and len(item) == 1:
                out += self._group_entry(item, group, at, doc, directory)
            else:
                self.reader.problem(doc, at, f"got {item!r}, expected a config name (base/common), a file "
                                             "(base/common.yaml), GROUP: OPTION or _self_")
        return out

    def _string_entry(self, item: str, group: str, at: Path, doc: Document, directory: str) -> list[_Entry]:
        if item == _SELF:
            return [_Entry("self", "", None, False, at, doc, directory)]
        name, sep, package = item.partition("@")
        if name.endswith((".yaml", ".yml")):
            return [_Entry("file", name, package, False, at, doc, directory)]
        return [_Entry("config", _join(group, name), package if sep else None, False, at, doc, directory)]

    def _group_entry(self, item: dict[str, Any], group: str, at: Path, doc: Document, directory: str) -> list[_Entry]:
        key, option = next(iter(item.items()))
        words = str(key).split()
        flags, spec = set(words[:-1]), (words[-1] if words else "")
        if flags - {"optional", "override"} or not spec:
            self.reader.problem(doc, at, f"got {key!r}, expected GROUP, optional GROUP or override GROUP")
            return []
        if spec == "hydra" or spec.startswith("hydra/"):
            self.reader.problem(doc, at, f"{spec}: Hydra's own config groups are not supported (they configure "
                                         "Hydra's runner, not the recipe)")
            return []
        name, sep, package = spec.partition("@")
        if option is None:
            return []
        options = option if isinstance(option, list) else [option]
        if not options or not all(isinstance(o, str) and o for o in options):
            self.reader.problem(doc, at, f"got {option!r}, expected an option name (a config of group {name})")
            return []
        kind = "override" if "override" in flags else "group"
        self.groups.add(_join(group, name))
        key = _join(group, name) + (f"@{package}" if sep else "")
        return [_Entry(kind, _join(group, f"{name}/{o}"), package if sep else None, "optional" in flags, at,
                       doc, directory, key) for o in options]

    def _target(self, e: _Entry, path: str) -> str | None:
        """The file of an entry, or None (a problem was reported, or an optional option is missing)."""
        # a file is relative to the config naming it, unless absolute (from the recipe's directory)
        file = find_file(e.directory if e.kind == "file" and not path.startswith("/") else self.root, path.lstrip("/"))
        if os.path.exists(file):
            return file
        if e.kind == "file":
            self.reader.problem(e.doc, e.at, f"parent file {file} does not exist")
        elif not e.optional:
            options = _options(self.root, os.path.dirname(path))
            hint = f" (options: {', '.join(options)})" if options else ""
            self.reader.problem(e.doc, e.at, f"no config {path}.yaml under {self.root}{hint}")
        return None

    def _package(self, e: _Entry, target: str, path: str, parent: str) -> str:
        """Where the entry's content goes (Hydra's package rules)."""
        if e.kind == "file":
            return _join_pkg(parent, "" if e.package in (None, "_global_") else str(e.package))
        if e.package is not None:  # entry@package: relative to the containing config's package
            return "" if e.package == "_global_" else _join_pkg(parent, _expand(e.package, path))
        header = _header(target)
        if header is not None:
            return _expand(header, path)
        default = os.path.dirname(path).replace("/", ".")
        if default and e.kind == "config":
            self.notes.append(f"recipe defaults: {path} goes under {default!r} (Hydra's default package is the "
                              f"config group); to merge it at the top level, add `# @package _global_` to "
                              f"{os.path.relpath(target)} or list it as the file {path}.yaml")
        return default


    def group_of(self, key: str) -> str | None:
        """The config group a command-line key names, as Hydra's ``group_exists`` finds it: a group
        the defaults lists choose from, or a directory of configs beside the recipe (``model`` in
        ``model=big``, ``model@policy=big``, ``db/mysql=x``); None for an ordinary key."""
        name = key.split("@", 1)[0]
        if name in self.groups or _options(self.root, name):
            return name
        return name if ("/" in key or "@" in key) and name else None

    def options(self, group: str) -> list[str]:
        return _options(self.root, group)


def _join(group: str, name: str) -> str:
    return name.lstrip("/") if name.startswith("/") or not group else f"{group}/{name}"


def _join_pkg(parent: str, child: str) -> str:
    return ".".join(p for p in (parent, child) if p)


def _expand(package: str, path: str) -> str:
    group, name = os.path.dirname(path).replace("/", "."), os.path.basename(path)
    parts = [group if p == "_group_" else name if p == "_name_" else p for p in package.split(".")]
    return ".".join(p for p in parts if p and p != "_global_")


def _group_of(root: str, file: str) -> str:
    rel = os.path.relpath(os.path.dirname(os.path.abspath(file)), root)
    return "" if rel == "." else rel.replace(os.sep, "/")


def _header(file: str) -> str | None:
    """The ``# @package X`` directive at the top of a config file, if any."""
    try:
        with open(file, encoding="utf-8") as f:
            head = f.read(4096)
    except (OSError, UnicodeDecodeError):
        return None
    for line in head.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return None
        m = _PACKAGE_HEADER.match(line)
        if m:
            return m.group(1)
    return None


def _options(root: str, group: str) -> list[str]:
    directory = os.path.join(root, group)
    if not os.path.isdir(directory):
        return []
    return sorted(os.path.splitext(n)[0] for n in os.listdir(directory) if n.endswith((".yaml", ".yml")))


def _place(doc: Document, package: str) -> Document:
    """``doc`` with its content moved under the dotted ``package`` ("" leaves it at the top)."""
    if not package:
        return doc
    keys = tuple(package.split("."))
    data: Any = doc.data
    for k in reversed(keys):
        data = {k: data}
    return Document(data, {(*keys, *p): m for p, m in doc.marks.items()},
               {(*keys, *p): m for p, m in doc.key_marks.items()})
