"""Kubeconfig files read as kubectl reads them, with errors that say where a file is wrong.

Which files (client-go ``ClientConfigLoadingRules``, as documented in "Organizing Cluster
Access Using kubeconfig Files"):

* ``--kubeconfig FILE``: that file only (it must exist), no merging;
* else ``$KUBECONFIG``, a ``:``-separated list (``;`` on Windows): empty entries and
  repeats are ignored, files that do not exist are skipped, the rest are **merged**;
* else ``~/.kube/config`` if it exists (else in-cluster service account, or nothing).

Merging: the first file to set a value wins, and a named entry (a cluster, context or
user) is taken whole from the first file that defines that name: a later file's entry of
the same name is discarded, even its non-conflicting fields. ``current-context`` comes from
the first file that sets one. Relative paths (``certificate-authority``,
``client-certificate``, ``client-key``, ``tokenFile``, an exec ``command`` containing a
``/``) are resolved against the directory of the file that holds them, before merging.

Malformed content is a :class:`KubeconfigError` (exit 2) naming file:line:col and the key
("clusters: got a mapping, expected a list"), never a Python exception. Pure except for
reading the files named (with :func:`dockyard_k8s.yamlfile.load_all`: go-yaml's scalars, a
repeated key keeping its last value, as client-go reads them); no cluster library is imported here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dockyard_k8s.errors import ConfigError, ConfigProblem
from dockyard_k8s.plain import show_typed
from dockyard_k8s.yamlfile import Document, Mark, YamlError, load_all, read_text

SECTIONS = (("clusters", "cluster"), ("contexts", "context"), ("users", "user"))
DEFAULT_KUBECONFIG = "~/.kube/config"
_PATH_FIELDS = {"cluster": ("certificate-authority",), "user": ("client-certificate", "client-key", "tokenFile")}
HINT = "set KUBECONFIG or pass --kubeconfig / --context (`kubectl config get-contexts` lists the contexts)"


class KubeconfigError(ConfigError):
    """A kubeconfig that cannot be used: every problem, located (exit 2, bad input).
    ``hint``: what to do, when it is more precise than choosing another context."""

    hint = ""

    def render(self) -> str:
        lines = [str(p) for p in self.problems]
        lines.append(f"hint: {self.hint or HINT}")
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Kubeconfig:
    """The merged configuration (kubeconfig shape: lists of named entries) and where each
    entry came from."""

    data: dict[str, Any]
    files: list[str]  # the files merged, in order
    where: dict[tuple[str, ...], Mark]  # (section, name[, field]) or ("current-context",) -> its place

    def names(self, section: str) -> list[str]:
        return [str(e["name"]) for e in self.data.get(section) or []]

    def locate(self, section: str, name: str, *fields: str) -> Mark:
        """Where the first of ``fields`` found in entry ``name`` is, else the entry, else the
        first file (an error is always located somewhere)."""
        for key in [*((section, name, f) for f in fields if f), (section, name)]:
            if key in self.where:
                return self.where[key]
        return Mark(self.files[0] if self.files else "kubeconfig")

    def entry(self, section: str, name: str) -> dict[str, Any] | None:
        key = dict(SECTIONS)[section]
        return next((dict(e.get(key) or {}) for e in self.data.get(section) or [] if e["name"] == name), None)


@dataclass(frozen=True, slots=True)
class Selected:
    """One context resolved: what a client connects with."""

    name: str
    context: dict[str, Any]
    cluster: dict[str, Any]
    user: dict[str, Any] | None
    namespace: str | None  # the context's namespace, None when it sets none


def kubeconfig_files(explicit: str | None = None, env: Mapping[str, str] | None = None) -> list[str]:
    """The files kubectl would read, in merge order (only existing ones, except ``explicit``)."""
    env = os.environ if env is None else env
    if explicit:
        return [os.path.expanduser(explicit)]
    if env.get("KUBECONFIG"):
        paths = dict.fromkeys(os.path.expanduser(part) for part in env["KUBECONFIG"].split(os.pathsep) if part)
        return [path for path in paths if os.path.exists(path)]
    default = os.path.expanduser(DEFAULT_KUBECONFIG)
    return [default] if os.path.exists(default) else []


def _at(doc: Document, file: str, *path: str | int) -> Mark:
    """Where the value at ``path`` is written, else its nearest enclosing value (else the file)."""
    for end in range(len(path), -1, -1):
        mark = doc.marks.get(path[:end])
        if mark is not None:
            return mark
    return Mark(file)


def _what(value: Any) -> str:
    """What was found, as every message says it (:func:`~dockyard_k8s.plain.show_typed`); a
    missing entry is "nothing"."""
    return "nothing" if value is None else show_typed(value)


def problem(at: Mark, path: str, message: str) -> ConfigProblem:
    """A problem at ``at``: the key ``path`` and what is wrong with it."""
    return ConfigProblem(at.file, at.line, at.col, path, message)


class _Reader:
    def __init__(self) -> None:
        self.problems: list[ConfigProblem] = []

    def problem(self, where: Mark, path: str, message: str) -> None:
        self.problems.append(problem(where, path, message))

    def read(self, file: str) -> Document | None:
        """One file (its data a mapping); None (with a problem) when it cannot be used at all.
        An empty file is ``{}``: kubectl treats it as a kubeconfig that sets nothing."""
        try:
            text = read_text(file)
        except OSError as e:
            self.problem(Mark(file), "", f"cannot read kubeconfig: {e.strerror or e}")
            return None
        except YamlError as e:
            self.problem(e.problem.mark, "", f"{e.problem.message}: is this a kubeconfig?")
            return None
        loaded = load_all(text, file, single=True, last_key_wins=True)
        if loaded.error is not None or loaded.problems:
            for p in loaded.problems if loaded.error is None else [loaded.error]:
                where = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in p.path).lstrip(".")
                self.problem(p.mark, where, f"not valid YAML: {p.message}")
            return None
        doc = loaded.documents[0] if loaded.documents else Document(None)
        if doc.data is None:
            return Document({})
        if not isinstance(doc.data, dict):
            self.problem(_at(doc, file), "", f"got {_what(doc.data)}, expected a mapping (a kubeconfig: apiVersion, "
                                             "clusters, contexts, users, current-context)")
            return None
        return doc

    def entries(self, file: str, doc: Document, section: str,
                key: str) -> list[tuple[str, dict[str, Any], dict[tuple[str, ...], Mark]]]:
        """Valid ``{name, <key>: {...}}`` entries of a section (name, body, where the entry and
        each of its fields are), problems for the others."""
        value = doc.data.get(section)
        if value is None:
            return []
        if not isinstance(value, list):
            self.problem(_at(doc, file, section), section, f"got {_what(value)}, expected a list of "
                                                           f"{{name: ..., {key}: {{...}}}} entries")
            return []
        out = []
        for i, item in enumerate(value):
            path = f"{section}[{i}]"
            if not isinstance(item, dict):
                self.problem(_at(doc, file, section, i), path, f"got {_what(item)}, expected a mapping with name "
                                                               f"and {key}")
                continue
            name = item.get("name")
            if not isinstance(name, str) or not name:
                self.problem(_at(doc, file, section, i, "name"), f"{path}.name",
                             f"got {_what(name)}, expected the entry's name (a string)")
                continue
            body = item.get(key)
            if body is None and key != "user":
                self.problem(_at(doc, file, section, i), f"{path}.{key}", f"{key} of '{name}' is missing or empty "
                                                                           "(expected a mapping)")
                continue
            if body is not None and not isinstance(body, dict):
                self.problem(_at(doc, file, section, i, key), f"{path}.{key}",
                             f"got {_what(body)}, expected a mapping")
                continue
            places: dict[tuple[str, ...], Mark] = {(section, name): _at(doc, file, section, i)}
            for field in body or {}:
                places[(section, name, str(field))] = _at(doc, file, section, i, key, str(field))
            out.append((name, dict(body or {}), places))
        return out


def _resolve_paths(kind: str, body: dict[str, Any], base: str) -> dict[str, Any]:
    """client-go's ResolveLocalPaths: relative file references against the file's directory."""
    out = dict(body)
    for field in _PATH_FIELDS.get(kind, ()):
        value = out.get(field)
        if isinstance(value, str) and value and not os.path.isabs(value):
            out[field] = os.path.normpath(os.path.join(base, value))
    exec_ = out.get("exec")
    if kind == "user" and isinstance(exec_, dict):
        command = exec_.get("command")
        if isinstance(command, str) and os.sep in command and not os.path.isabs(command):
            out["exec"] = {**exec_, "command": os.path.normpath(os.path.join(base, command))}
    return out


def merge_files(files: Sequence[str]) -> Kubeconfig:
    """Read and merge ``files`` in order (first wins). Raises KubeconfigError on malformed content."""
    reader = _Reader()
    merged: dict[str, Any] = {"clusters": [], "contexts": [], "users": []}
    where: dict[tuple[str, ...], Mark] = {}
    for file in files:
        doc = reader.read(file)
        if doc is None:
            continue
        base = os.path.dirname(os.path.abspath(file))
        for section, key in SECTIONS:
            for name, body, places in reader.entries(file, doc, section, key):
                if (section, name) in where:
                    continue  # first file wins, the whole entry
                where.update(places)
                merged[section].append({"name": name, key: _resolve_paths(key, body, base)})
        current = doc.data.get("current-context")
        if current is not None and not isinstance(current, str):
            reader.problem(_at(doc, file, "current-context"), "current-context",
                           f"got {_what(current)}, expected a context name")
        elif current and "current-context" not in merged:
            merged["current-context"] = current
            where[("current-context",)] = _at(doc, file, "current-context")
    if reader.problems:
        raise KubeconfigError(reader.problems)
    return Kubeconfig(merged, list(files), where)


def load(explicit: str | None = None, env: Mapping[str, str] | None = None) -> Kubeconfig | None:
    """The merged kubeconfig kubectl would use; None when there is no file at all.

    Raises:
        KubeconfigError: ``--kubeconfig`` names no file, or a file is malformed.
    """
    files = kubeconfig_files(explicit, env)
    if explicit and not os.path.exists(files[0]):
        raise KubeconfigError([ConfigProblem(explicit, 0, 0, "", "--kubeconfig: no such file")])
    return merge_files(files) if files else None


def select(config: Kubeconfig, context: str | None = None) -> Selected:
    """The named (or current) context with its cluster and user.

    Raises:
        KubeconfigError: no context to use, or it names a cluster/user no file defines.
    """
    files = ", ".join(config.files)
    contexts = config.names("contexts")
    name = context or config.data.get("current-context")
    if not name:
        if not contexts and not config.names("clusters"):
            raise KubeconfigError([ConfigProblem(files, 0, 0, "", "the kubeconfig is empty: no contexts, no "
                                                                  "clusters")])
        names = ", ".join(contexts) or "none"
        raise KubeconfigError([ConfigProblem(files, 0, 0, "current-context",
                                             f"is not set: pass --context (contexts: {names})")])
    ctx = config.entry("contexts", name)
    if ctx is None:
        at = config.where.get(("current-context",), Mark(files)) if not context else Mark(files)
        what = "--context" if context else "current-context"
        raise KubeconfigError([problem(at, what, f"context '{name}' is not in the kubeconfig "
                                                 f"(contexts: {', '.join(contexts) or 'none'})")])
    problems = []
    for field, section in (("cluster", "clusters"), ("user", "users")):
        ref = ctx.get(field)
        at = config.where.get(("contexts", name, field)) or config.where.get(("contexts", name), Mark(files))
        if ref is None or ref == "":
            if field == "cluster":
                problems.append(problem(at, f"contexts.{name}.cluster", "is missing: the context names no cluster"))
            continue
        if not isinstance(ref, str):
            problems.append(problem(at, f"contexts.{name}.{field}", f"got {_what(ref)}, expected a {field} name"))
        elif config.entry(section, ref) is None:
            problems.append(problem(at, f"contexts.{name}.{field}", f"names {field} '{ref}', which no kubeconfig file "
                                    f"defines ({section}: {', '.join(config.names(section)) or 'none'})"))
    cluster = config.entry("clusters", str(ctx.get("cluster"))) or {}
    if not problems and not cluster.get("server"):
        at = config.where.get(("clusters", str(ctx["cluster"])), Mark(files))
        problems.append(problem(at, f"clusters.{ctx['cluster']}.server", "is missing: the cluster has no server URL"))
    namespace = ctx.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        at = config.where.get(("contexts", name, "namespace"), Mark(files))
        problems.append(problem(at, f"contexts.{name}.namespace", f"got {_what(namespace)}, expected a namespace name"))
    if problems:
        raise KubeconfigError(problems)
    user = config.entry("users", str(ctx["user"])) if ctx.get("user") else None
    return Selected(name, ctx, cluster, user, namespace or None)


@dataclass(frozen=True, slots=True)
class Target:
    """The cluster a live command talks to, resolved once per command: the merged kubeconfig
    (None: no file at all, in-cluster or nothing) and the context selected from it, or the
    problem that makes them unusable, kept until connecting raises it (the namespace default
    is quiet about it: the run's own problems are reported first)."""

    config: Kubeconfig | None = None
    selected: Selected | None = None
    error: KubeconfigError | None = None

    @property
    def namespace(self) -> str | None:
        """The context's namespace (None: it sets none, or there is no usable kubeconfig)."""
        return self.selected.namespace if self.selected is not None else None

    def usable(self) -> tuple[Kubeconfig, Selected] | None:
        """The kubeconfig and its context; None when there is no kubeconfig file.

        Raises:
            KubeconfigError: the problem :func:`resolve` found.
        """
        if self.error is not None:
            raise self.error
        if self.config is None or self.selected is None:
            return None
        return self.config, self.selected


def resolve(explicit: str | None = None, context: str | None = None,
            env: Mapping[str, str] | None = None) -> Target:
    """The target of ``--kubeconfig`` / ``--context`` (:func:`load`, then :func:`select`):
    every file is read here, once."""
    try:
        config = load(explicit, env)
        return Target(config, select(config, context) if config is not None else None)
    except KubeconfigError as e:
        return Target(error=e)

