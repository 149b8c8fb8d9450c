"""Validation results as plain data: one :class:`Problem` per thing wrong, one :class:`Report` per run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dockyard_k8s.kube import format_ref
from dockyard_k8s.plain import Path as JsonPath
from dockyard_k8s.plain import format_path

# Where a problem comes from (Problem.rule), stable strings for --output json and filters.
RULE_YAML = "yaml"  # the file could not be read as YAML/JSON (syntax, duplicate key)
RULE_OBJECT = "object"  # not a Kubernetes object (no apiVersion/kind), rejected or unknown kind
RULE_SCHEMA = "schema"  # the OpenAPI / CRD schema rejects it (unknown field, wrong type, ...)
RULE_SEMANTIC = "semantic"  # a rule the schema cannot express (quantities, names, selectors, ...)
RULE_KUBERAY = "kuberay"  # what the KubeRay operator rejects at reconcile time
RULE_KUEUE = "kueue"  # what Kueue's admission webhook refuses on a queued job


@dataclass(frozen=True, slots=True)
class Document:
    """One object to validate: ``path`` is its place inside the document (``("items", 3)``)."""

    file: str
    doc_index: int
    path: JsonPath
    obj: Any
    line: int  # 1-based line where the document starts in the file (0 for in-memory objects)


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with one document."""

    file: str  # the manifest file ("-" for stdin, "" for in-memory objects)
    doc_index: int  # 0-based document index in the file (an item of a ``kind: List``: the List's)
    kind: str
    name: str
    path: JsonPath  # the JSON path inside the document (``("items", i, ...)`` in a List)
    message: str
    namespace: str = ""
    rule: str = RULE_SCHEMA
    line: int = 0  # the 1-based line of ``path`` in the file when known

    @property
    def where(self) -> str:
        """``file:line`` when the line is known, else ``file#doc`` (``doc N`` for in-memory objects)."""
        if self.line and self.file:
            return f"{self.file}:{self.line}"
        return f"{self.file}#{self.doc_index}" if self.file else f"object {self.doc_index}"

    @property
    def object_ref(self) -> str:
        """``Kind namespace/name`` as kubectl prints it, or ``document`` when unknown."""
        return format_ref(self.kind, self.namespace, self.name)

    def __str__(self) -> str:
        at = format_path(self.path)
        return f"{self.where}: {self.object_ref}: {at + ': ' if at else ''}{self.message}"


@dataclass(frozen=True, slots=True)
class Report:
    """Everything one validation run found."""

    problems: list[Problem]
    objects: int  # the objects looked at
    skipped: int  # those matched by ``skip``
    missing: list[str]  # the ``apiVersion/Kind`` that had no schema (only the rules checked them)
    sources: dict[str, str]  # each ``apiVersion/Kind`` validated -> a one-line description of its schema

    def coverage(self) -> str:
        """One line: which schemas the objects were validated against, and which had none."""
        by_source: dict[str, list[str]] = {}
        for api_kind, source in self.sources.items():
            by_source.setdefault(source, []).append(api_kind.rsplit("/", 1)[-1])
        parts = [f"{', '.join(kinds)} against {source}" for source, kinds in by_source.items()]
        line = "validated " + ("; ".join(parts) if parts else "without schemas")
        if self.missing:
            kinds = ", ".join(m.rsplit("/", 1)[-1] for m in self.missing)
            line += (f"; no schema for {kinds}: checked with the semantic"
                     f"{' and KubeRay' if any(m.startswith('ray.io/') for m in self.missing) else ''} rules only "
                     "(get CRDs with `dockyard-k8s schemas fetch --kuberay VERSION`)")
        return line

    @property
    def invalid(self) -> int:
        """Number of distinct documents/objects with at least one problem."""
        return len({object_key(p) for p in self.problems})

    @property
    def valid(self) -> int:
        """Objects looked at with no problem: ``objects`` = valid + invalid + skipped."""
        return max(self.objects - self.skipped - self.invalid, 0)


def object_key(p: Problem) -> tuple[str, int, JsonPath]:
    """The object a problem is about: its file, document, and List item."""
    return p.file, p.doc_index, p.path[:2] if p.path[:1] == ("items",) else ()


def in_report_order(problems: list[Problem]) -> list[Problem]:
    """Problems in the order they are reported: YAML's first (as read), then by object and by line
    within it (the checks' own order where lines tie or are unknown)."""
    rest = sorted((p for p in problems if p.rule != RULE_YAML), key=lambda p: (*object_key(p), p.line))
    return [p for p in problems if p.rule == RULE_YAML] + rest


def count_objects(documents: list[Document], yaml_problems: list[Problem]) -> int:
    """The objects of ``documents`` plus the documents YAML could not read (each counted once,
    so ``objects`` = valid + invalid + skipped in every summary)."""
    unread = {object_key(p) for p in yaml_problems}
    if unread:
        unread -= {(d.file, d.doc_index, d.path) for d in documents}
    return len(documents) + len(unread)
