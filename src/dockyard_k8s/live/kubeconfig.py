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
reading the files named; no cluster library is imported here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from dockyard_k8s.errors import ConfigError, ConfigProblem
from dockyard_k8s.plain import Record, show_typed

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


class Where(Record):
    __slots__ = ("file", "line", "col")

    def __init__(self, file: str, line: int = 0, col: int = 0) -> None:
        self.file = file
        self.line = line
        self.col = col


class Kubeconfig(Record):
    """The merged configuration (kubeconfig shape: lists of named entries) and where each
    entry came from."""

    __slots__ = ("data", "files", "where")

    def __init__(self, data: dict[str, Any], files: list[str], where: dict[tuple[str, ...], Where]) -> None:
        self.data = data
        self.files = files  # the files merged, in order
        self.where = where  # (section, name[, field]) or ("current-context",) -> its place

    def names(self, section: str) -> list[str]:
        return [str(e["name"]) for e in self.data.get(section) or []]

    def locate(self, section: str, name: str, *fields: str) -> Where:
        """Where the first of ``fields`` found in entry ``name`` is, else the entry, else the
        first file (an error is always located somewhere)."""
        for key in [*((section, name, f) for f in fields if f), (section, name)]:
            if key in self.where:
                return self.where[key]
        return Where(self.files[0] if self.files else "kubeconfig")

    def entry(self, section: str, name: str) -> dict[str, Any] | None:
        key = dict(SECTIONS)[section]
        for e in self.data.get(section) or []:
            if e["name"] == name:
                return dict(e.get(key) or {})
        return None


class Selected(Record):
    """One context resolved: what a client connects with."""

    __slots__ = ("name", "context", "cluster", "user", "namespace")

    def __init__(self, name: str, context: dict[str, Any], cluster: dict[str, Any], user: dict[str, Any] | None,
                 namespace: str | None) -> None:
        self.name = name
        self.context = context
        self.cluster = cluster
        self.user = user
        self.namespace = namespace  # the context's namespace, None when it sets none


def kubeconfig_files(explicit: str | None = None, env: Mapping[str, str] | None = None) -> list[str]:
    """The files kubectl would read, in merge order (only existing ones, except ``explicit``)."""
    env = os.environ if env is None else env
    if explicit:
        return [os.path.expanduser(explicit)]
    if env.get("KUBECONFIG"):
        out: list[str] = []
        for part in env["KUBECONFIG"].split(os.pathsep):
            path = os.path.expanduser(part)
            if part and path not in out and os.path.exists(path):
                out.append(path)
        return out
    default = os.path.expanduser(DEFAULT_KUBECONFIG)
    return [default] if os.path.exists(default) else []


def _mark(node: yaml.Node | None, file: str) -> Where:
    return Where(file, node.start_mark.line + 1, node.start_mark.column + 1) if node is not None else Where(file)


def _child(node: yaml.Node | None, key: str | int) -> yaml.Node | None:
    """The node under ``key`` of a mapping node (or index of a sequence node)."""
    if isinstance(node, yaml.MappingNode) and isinstance(key, str):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == key:
                return v
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
        return node.value[key]
    return None


def _what(value: Any) -> str:
    """What was found, as every message says it (:func:`~dockyard_k8s.plain.show_typed`); a
    missing entry is "nothing"."""
    return "nothing" if value is None else show_typed(value)


class _Reader:
    def __init__(self) -> None:
        self.problems: list[ConfigProblem] = []

    def problem(self, where: Where, path: str, message: str) -> None:
        self.problems.append(ConfigProblem(where.file, where.line, where.col, path, message))

    def read(self, file: str) -> tuple[dict[str, Any], yaml.Node | None] | None:
        """(data, node) of one file; None (with a problem) when it cannot be used at all.
        An empty file is ``{}``: kubectl treats it as a kubeconfig that sets nothing."""
        try:
            with open(file, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            self.problem(Where(file), "", f"cannot read kubeconfig: {e.strerror or e}")
            return None
        except UnicodeDecodeError as e:
            self.problem(Where(file), "", f"not UTF-8 text (byte {e.start}): is this a kubeconfig?")
            return None
        try:
            node = yaml.compose(text, Loader=yaml.SafeLoader)
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = Where(file, mark.line + 1, mark.column + 1) if mark else Where(file)
            self.problem(where, "", f"not valid YAML: {getattr(e, 'problem', None) or e}")
            return None
        if data is None:
            return {}, None
        if not isinstance(data, dict):
            self.problem(_mark(node, file), "", f"got {_what(data)}, expected a mapping (a kubeconfig: apiVersion, "
                                                "clusters, contexts, users, current-context)")
            return None
        return data, node

    def entries(self, file: str, data: dict[str, Any], node: yaml.Node | None, section: str,
                key: str) -> list[tuple[str, dict[str, Any], dict[tuple[str, ...], Where]]]:
        """Valid ``{name, <key>: {...}}`` entries of a section (name, body, where the entry and
        each of its fields are), problems for the others."""
        value = data.get(section)
        snode = _child(node, section)
        if value is None:
            return []
        if not isinstance(value, list):
            self.problem(_mark(snode, file), section, f"got {_what(value)}, expected a list of "
                                                      f"{{name: ..., {key}: {{...}}}} entries")
            return []
        out = []
        for i, item in enumerate(value):
            inode = _child(snode, i)
            path = f"{section}[{i}]"
            if not isinstance(item, dict):
                self.problem(_mark(inode, file), path, f"got {_what(item)}, expected a mapping with name and {key}")
                continue
            name = item.get("name")
            if not isinstance(name, str) or not name:
                self.problem(_mark(_child(inode, "name") or inode, file), f"{path}.name",
                             f"got {_what(name)}, expected the entry's name (a string)")
                continue
            body = item.get(key)
            if body is None and key != "user":
                self.problem(_mark(inode, file), f"{path}.{key}", f"{key} of '{name}' is missing or empty "
                                                                  "(expected a mapping)")
                continue
            if body is not None and not isinstance(body, dict):
                self.problem(_mark(_child(inode, key), file), f"{path}.{key}",
                             f"got {_what(body)}, expected a mapping")
                continue
            fields = _child(inode, key)
            places: dict[tuple[str, ...], Where] = {(section, name): _mark(inode, file)}
            for field in body or {}:
                places[(section, name, str(field))] = _mark(_child(fields, str(field)), file)
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
    where: dict[tuple[str, ...], Where] = {}
    for file in files:
        read = reader.read(file)
        if read is None:
            continue
        data, node = read
        base = os.path.dirname(os.path.abspath(file))
        for section, key in SECTIONS:
            for name, body, places in reader.entries(file, data, node, section, key):
                if (section, name) in where:
                    continue  # first file wins, the whole entry
                where.update(places)
                merged[section].append({"name": name, key: _resolve_paths(key, body, base)})
        current = data.get("current-context")
        if current is not None and not isinstance(current, str):
            reader.problem(_mark(_child(node, "current-context"), file), "current-context",
                           f"got {_what(current)}, expected a context name")
        elif current and "current-context" not in merged:
            merged["current-context"] = current
            where[("current-context",)] = _mark(_child(node, "current-context"), file)
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
        at = config.where.get(("current-context",), Where(files)) if not context else Where(files)
        what = "--context" if context else "current-context"
        raise KubeconfigError([ConfigProblem(at.file, at.line, at.col, what,
                                             f"context '{name}' is not in the kubeconfig "
                                             f"(contexts: {', '.join(contexts) or 'none'})")])
    problems = []
    for field, section in (("cluster", "clusters"), ("user", "users")):
        ref = ctx.get(field)
        at = config.where.get(("contexts", name, field)) or config.where.get(("contexts", name), Where(files))
        if ref is None or ref == "":
            if field == "cluster":
                problems.append(ConfigProblem(at.file, at.line, at.col, f"contexts.{name}.cluster",
                                              "is missing: the context names no cluster"))
            continue
        if not isinstance(ref, str):
            problems.append(ConfigProblem(at.file, at.line, at.col, f"contexts.{name}.{field}",
                                          f"got {_what(ref)}, expected a {field} name"))
        elif config.entry(section, ref) is None:
            problems.append(ConfigProblem(at.file, at.line, at.col, f"contexts.{name}.{field}",
                                          f"names {field} '{ref}', which no kubeconfig file defines "
                                          f"({section}: {', '.join(config.names(section)) or 'none'})"))
    cluster = config.entry("clusters", str(ctx.get("cluster"))) or {}
    if not problems and not cluster.get("server"):
        at = config.where.get(("clusters", str(ctx["cluster"])), Where(files))
        problems.append(ConfigProblem(at.file, at.line, at.col, f"clusters.{ctx['cluster']}.server",
                                      "is missing: the cluster has no server URL"))
    namespace = ctx.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        at = config.where.get(("contexts", name, "namespace"), Where(files))
        problems.append(ConfigProblem(at.file, at.line, at.col, f"contexts.{name}.namespace",
                                      f"got {_what(namespace)}, expected a namespace name"))
    if problems:
        raise KubeconfigError(problems)
    user = config.entry("users", str(ctx["user"])) if ctx.get("user") else None
    return Selected(name, ctx, cluster, user, namespace or None)


def context_namespace(explicit: str | None = None, context: str | None = None,
                      env: Mapping[str, str] | None = None) -> str | None:
    """The namespace of the context a live command would use (None: it sets none, or there
    is no usable kubeconfig; connecting reports why)."""
    try:
        config = load(explicit, env)
        return select(config, context).namespace if config is not None else None
    except KubeconfigError:
        return None
