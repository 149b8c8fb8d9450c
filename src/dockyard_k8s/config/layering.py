"""Helm-style layering of YAML files, reusable by every spec (the infra spec, serve's spec).

Layers, last wins: the spec's shipped defaults < (a platform profile) < the user defaults file <
each ``-f/--infra FILE`` in order (each merged over its own ``defaults:`` chain first) <
``--set`` < ``--set-string`` < ``--set-file`` < what a command itself sets (:class:`Setting`).

One merge rule, for files and ``--set`` alike:

* mappings merge key by key (a ``{}`` keeps everything lower layers set);
* scalars and lists replace;
* ``null`` removes what lower layers set: a key the schema documents as nullable becomes
  null (its documented meaning: no limit, drop the volume...), an entry of a free map (``env``,
  ``nodeSelector``...) is deleted, and any other key goes back to its shipped default.

Everything here is pure except reading the files named; the environment is passed in.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

from dockyard_k8s import yamlfile
from dockyard_k8s.config import overrides as ov
from dockyard_k8s.config.model import problem_at
from dockyard_k8s.config.schema import NO_DEFAULT, Schema, defaults_of, shorthands
from dockyard_k8s.config.yamlio import Document, Mark, Path, format_path, parse_yaml
from dockyard_k8s.credentials import redact_assignment, secret_assignment, secret_values
from dockyard_k8s.errors import ConfigProblem
from dockyard_k8s.plain import clone, show_typed
from dockyard_k8s.suggest import closest


@dataclass(frozen=True, slots=True)
class Setting:
    """A typed value on top of the file layers (``--set``-like, or forced by a command:
    ``cluster up`` sets ``launch.mode: bringup``, ``-n`` sets ``infra.namespace``).
    ``origin`` names it in problems (``--set a.b=1``, ``--pre-running-deadline``)."""

    path: Path
    value: Any
    origin: str


@dataclass(frozen=True, slots=True)
class Layers:
    """What goes on top of the files: the user's ``--set``, ``--set-string`` and ``--set-file``
    (in Helm's order) and Hydra-style recipe ``overrides``; the environment ``${VAR}`` reads
    (None: this process's); what a command forces on top of them all (``values``: ``-n``, ``cluster
    up``'s mode) and what it knows below the user's layers (``under``: the kubeconfig context's
    namespace, not a source: the user did not write it)."""

    sets: Sequence[str] = ()
    set_strings: Sequence[str] = ()
    set_files: Sequence[str] = ()
    overrides: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    values: Sequence[Setting] = ()
    under: Sequence[Setting] = ()

    def environ(self) -> Mapping[str, str]:
        return dict(os.environ) if self.env is None else self.env


# --- reading files ------------------------------------------------------------------------


def read_text(file: str) -> str | ConfigProblem:
    """A config file's text, or the problem reading it (missing, unreadable, not UTF-8)."""
    try:
        return yamlfile.read_text(file)
    except OSError as e:
        near = _near_file(file) if isinstance(e, FileNotFoundError) else ""
        return ConfigProblem(file, 0, 0, "", f"cannot read file: {e.strerror or e}{near}")
    except yamlfile.YamlError as e:
        at = e.problem.mark
        return ConfigProblem(file, at.line, at.col, "", e.problem.message)


def _near_file(file: str) -> str:
    """``; did you mean 'grpo_swe.yaml'?`` for a YAML file beside ``file`` of a near name (the
    names compared without their extension, which every candidate shares)."""
    folder = os.path.dirname(file) or "."
    if not os.path.isdir(folder):
        return ""
    stems = {os.path.splitext(n)[0]: n for n in sorted(os.listdir(folder)) if n.endswith((".yaml", ".yml"))}
    near = closest(os.path.splitext(os.path.basename(file))[0], stems)
    return f"; did you mean '{os.path.join(os.path.dirname(file), stems[near])}'?" if near is not None else ""


class LayerReader:
    """Reads files (each over its ``defaults:`` chain) and collects every problem. With the
    files' ``schema``, a string that stands for an object (``x-shorthand``) is expanded as the
    file is read, so it merges with parents as the object would."""

    def __init__(self, env: Mapping[str, str], schema: Schema | None = None) -> None:
        self.env = env
        self.short = shorthands(schema) if schema is not None else []  # strings that stand for objects
        self.problems: list[ConfigProblem] = []
        self.files: list[str] = []  # every file read, parents before children
        self.empty: list[str] = []  # files with nothing in them

    def problem(self, doc: Document, path: Path, message: str, *, at_key: bool = False) -> None:
        self.problems.append(problem_at(doc.marks, doc.key_marks, path, message, at_key=at_key))

    def read(self, file: str) -> Document | None:
        """One file as a top-level mapping (``{}`` when empty), or None after a problem."""
        text = read_text(file)
        if isinstance(text, ConfigProblem):
            self.problems.append(text)
            return None
        doc, problems = parse_yaml(text, file, self.env)
        self.problems.extend(problems)
        if problems:
            return None
        if not isinstance(doc.data, dict):
            self.problems.append(ConfigProblem(file, 1, 1, "", f"got {show_typed(doc.data)}, "
                                                               "expected a mapping at the top level"))
            return None
        if not doc.data:
            self.empty.append(file)
        return _expand_doc(doc, self.short)

    def load_chain(self, file: str, stack: tuple[str, ...] = ()) -> Document:
        """A file merged over its ``defaults:`` parents (file names relative to it, ``.yaml``
        optional, parent-first, chains allowed, cycles reported)."""
        doc = self.read(file)
        if doc is None:
            return Document({})
        parents = doc.data.pop("defaults", None)
        if parents is None:
            self.files.append(file)
            return doc
        names = [parents] if isinstance(parents, str) else parents
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            self.problem(doc, ("defaults",), f"got {parents!r}, expected a file name or a list of names")
            return doc
        merged = Document({})
        real = os.path.realpath(file)
        for i, name in enumerate(names):
            at: Path = ("defaults", i) if isinstance(parents, list) else ("defaults",)
            parent = find_file(os.path.dirname(file), name)
            if os.path.realpath(parent) in (*stack, real):
                chain = " -> ".join([*stack, real, os.path.realpath(parent)])
                self.problem(doc, at, f"defaults cycle: {chain}")
                continue
            if not os.path.exists(parent):
                self.problem(doc, at, f"parent file {parent} does not exist")
                continue
            merged = merge_docs(merged, self.load_chain(parent, (*stack, real)))
        self.files.append(file)
        return merge_docs(merged, doc)


def find_file(directory: str, name: str) -> str:
    """``name`` relative to ``directory``; ``base`` finds ``base.yaml`` (or ``.yml``) when only that exists."""
    path = os.path.normpath(os.path.join(directory, name))
    if not os.path.exists(path) and not path.endswith((".yaml", ".yml")):
        for ext in (".yaml", ".yml"):
            if os.path.exists(path + ext):
                return path + ext
    return path


# --- merging --------------------------------------------------------------------------------


def merge(base: Any, over: Any) -> Any:
    """Deep merge of plain data: mappings merge key by key, anything else is replaced
    (``null`` too: :func:`resolve_nulls` then applies the schema's meaning)."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = merge(base[k], v) if k in base else v
        return out
    return over


def merge_docs(base: Document, over: Document) -> Document:
    # Marks of values the overlay replaced linger under their paths, but every path the
    # overlay wrote has its own mark, so lookups of existing paths always find the right one.
    return Document(merge(base.data, over.data), {**base.marks, **over.marks}, {**base.key_marks, **over.key_marks})


def settings_of(layers: Layers) -> tuple[list[Setting], list[ConfigProblem]]:
    """``--set KEY=VALUE`` (typed as YAML), ``--set-string KEY=VALUE`` (always a string) and
    ``--set-file KEY=PATH`` (the file's text), in Helm's order, then the command's ``values``."""
    out: list[Setting] = []
    problems: list[ConfigProblem] = []
    for flag, texts in (("--set", layers.sets), ("--set-string", layers.set_strings),
                        ("--set-file", layers.set_files)):
        for text in texts:
            origin = f"{flag} {text}"
            path, value, error = ov.parse_set(text, typed=flag == "--set")
            if not error and flag == "--set-file":
                content = read_text(os.path.expanduser(str(value)))
                error = f"{content.message} ({value})" if isinstance(content, ConfigProblem) else ""
                value = content
            # every message that names this layer names it without a credential it holds
            if error or path is None:
                problems.append(ConfigProblem(redact_assignment(origin, always=True) if secret_assignment(text)
                                              else origin, 0, 0, "", error))
            else:
                out.append(Setting(path, value, redact_assignment(origin, always=True)
                                   if secret_values(value, path) else origin))
    return [*out, *layers.values], problems


def apply_settings(doc: Document, settings: Sequence[Setting]) -> list[ConfigProblem]:
    """Apply ``settings`` in order onto ``doc`` in place, with the merge rule of the files."""
    problems: list[ConfigProblem] = []
    for s in settings:
        mark = Mark(s.origin, 0, 0)
        created = [s.path[:end] for end in range(1, len(s.path) + 1) if s.path[:end] not in doc.marks]
        value = merge(ov.lookup(doc.data, s.path)[1], s.value)  # a mapping merges into one there, as in files
        error = ov.set_path(doc.data, s.path, value)
        if error:
            problems.append(ConfigProblem(mark.file, 0, 0, format_path(s.path), error))
            continue
        # every key it brings is this setting's, and all a list it sets holds (it replaced the list
        # of a lower layer, whose marks would otherwise stand for the items)
        for path in {s.path, *created, *ov.key_paths(value, s.path), *_list_paths(s.value, s.path)}:
            doc.marks[path] = doc.key_marks[path] = mark
    return problems


def _list_paths(data: Any, at: Path, *, inside: bool = False) -> list[Path]:
    """The path of everything inside a list in ``data`` (written at ``at``): items, their keys..."""
    out: list[Path] = []
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for k, v in items:
        here = (*at, k)
        within = inside or isinstance(data, list)
        out += [here] if within else []
        out += _list_paths(v, here, inside=within)
    return out


def resolve_nulls(schema: Schema, data: Any) -> None:
    """In place: the meaning of ``null`` in merged layers (see the module docstring)."""
    if isinstance(data, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in data:
                resolve_nulls(items, item)
        return
    if not isinstance(data, dict):
        return
    props: dict[str, Schema] = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key in list(data):
        sub = props.get(key)
        if data[key] is None:
            if sub is None:
                if isinstance(extra, dict) and not _nullable(extra):
                    del data[key]  # an entry of a free map
                continue
            if _nullable(sub):
                continue
            default = defaults_of(sub)
            if default is NO_DEFAULT:
                del data[key]
            else:
                data[key] = default
        elif sub is not None:
            resolve_nulls(sub, data[key])
        elif isinstance(extra, dict):
            resolve_nulls(extra, data[key])


def _expand(value: Any, at: Path, short: list[tuple[Path, str]]) -> tuple[Any, list[Path]]:
    """``value`` (written at ``at``) with each string that stands for an object (``x-shorthand``)
    replaced by that object, so ``model: org/name`` merges exactly as ``model: {id: org/name}``;
    and the paths expanded. ``value`` is not changed: what is expanded is copied."""
    expanded: list[Path] = []
    for path, key in short:
        if path[:len(at)] != at:
            continue
        rest = path[len(at):]
        found, current = ov.lookup(value, rest)
        if not found or not isinstance(current, str):
            continue
        if not rest:
            return {key: current}, [path]
        value = clone(value) if not expanded else value
        ov.set_path(value, rest, {key: current})
        expanded.append(path)
    return value, expanded


def _expand_doc(doc: Document, short: list[tuple[Path, str]]) -> Document:
    data, expanded = _expand(doc.data, (), short)
    if not expanded:
        return doc
    marks, key_marks = dict(doc.marks), dict(doc.key_marks)
    for path in expanded:  # the expanded key is where the string was written
        key = dict(short)[path]
        marks[(*path, key)] = key_marks[(*path, key)] = doc.marks[path]
    return Document(data, marks, key_marks)


def _nullable(schema: Schema) -> bool:
    t = schema.get("type")
    return t is None or t == "null" or (isinstance(t, list) and "null" in t)


def stack(schema: Schema, docs: Sequence[Document], settings: Sequence[Setting] = ()
          ) -> tuple[Document, list[ConfigProblem]]:
    """The shipped defaults of ``schema`` < ``docs`` (lowest first) < ``settings``, as one
    fresh Document (inputs untouched), nulls resolved."""
    out = reduce(merge_docs, docs, Document(defaults_of(schema)))
    out = dataclasses.replace(out, data=clone(out.data))  # its marks are new dicts, its data shares the docs'
    problems = apply_settings(out, _expanded(schema, settings))
    resolve_nulls(schema, out.data)
    return out, problems


def settings_layer(schema: Schema, settings: Sequence[Setting]) -> tuple[Document, list[ConfigProblem]]:
    """``settings`` as a layer of their own, to stack below the user's files (what a command
    knows but the user did not write: the kubeconfig context's namespace), each value marked
    with its origin."""
    out = Document({})
    return out, apply_settings(out, _expanded(schema, settings))


def _expanded(schema: Schema, settings: Sequence[Setting]) -> Sequence[Setting]:
    short = shorthands(schema)  # the files' were expanded as they were read (LayerReader.read)
    return [dataclasses.replace(s, value=_expand(s.value, s.path, short)[0]) for s in settings]
