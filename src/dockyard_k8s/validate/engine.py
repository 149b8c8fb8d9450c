"""The validation engine: objects in, every problem out.

For each object: pick its schema (built-in for the Kubernetes version, or a CRD), run the
compiled fast-fail validator, and on failure the collecting walker for every problem; then
the semantic rules (:mod:`.semantic`), for RayJob/RayCluster the KubeRay operator rules
(:mod:`.kuberay`), for a job queued with Kueue its webhook's (:mod:`.kueue`) and, over all
objects, the cross-object rules (:mod:`.cross`). Objects are grouped by kind so each
validator is loaded once, and only for the kinds present.

* :func:`validate_report` / :func:`validate_objects`: in-memory objects (``check``, ``render``);
* :func:`validate_documents`: documents read from files (:func:`.reader.read_manifests`);
* :func:`validate_files`: files and directories, in this process (``plan``, small inputs);
  :func:`.bulk.validate_paths` is the same on every core for large inputs;
* :class:`Engine`: the schemas of one run, for callers that check several batches
  (:mod:`.bulk`'s parts) and judge the cross-object rules once over all of them.

Every entry point takes one :class:`ValidateOptions`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from dockyard_k8s import kueue
from dockyard_k8s.kube import as_mapping, pod_templates
from dockyard_k8s.plain import show_typed
from dockyard_k8s.validate import builtin, cache
from dockyard_k8s.validate.collect import Collector
from dockyard_k8s.validate.compiled import ValidatorCache
from dockyard_k8s.validate.crd import CrdRegistry
from dockyard_k8s.validate.cross import CrossObjects, facts_of
from dockyard_k8s.validate.kuberay import kuberay_problems
from dockyard_k8s.validate.kueue import kueue_problems
from dockyard_k8s.validate.locate import add_lines
from dockyard_k8s.validate.problem import (
    RULE_KUBERAY,
    RULE_KUEUE,
    RULE_OBJECT,
    RULE_SCHEMA,
    RULE_SEMANTIC,
    Document,
    JsonPath,
    Problem,
    Report,
    count_objects,
    in_report_order,
    object_key,
)
from dockyard_k8s.validate.reader import read_manifests
from dockyard_k8s.validate.semantic import object_problems


@dataclass(frozen=True, slots=True)
class ValidateOptions:
    """What one validation run checks against, and how (a variant: ``dataclasses.replace(options, ...)``)."""

    kubernetes_version: str = builtin.DEFAULT_KUBERNETES_VERSION  # the newest built-in schemas not newer than it
    crd_sources: tuple[str, ...] = ()  # CRD files or directories, searched before the fetched and bundled CRDs
    skip: tuple[str, ...] = ()  # ``Kind`` or ``apiVersion/Kind`` names not to validate at all (``"A,B"`` allowed)
    reject: tuple[str, ...] = ()  # names that are an error wherever they appear
    ignore_missing_schemas: bool = False  # no schema is no error (the semantic and KubeRay rules still run)
    use_fetched: bool = True  # consult the CRDs of ``schemas fetch``
    use_bundled: bool = True  # consult the CRDs shipped with dockyard-k8s
    cache_dir: str | None = None  # cache root (default ``$XDG_CACHE_HOME/dockyard-k8s``)
    exit_on_error: bool = False  # stop after the first object with a problem


DEFAULT_OPTIONS = ValidateOptions()


@dataclass(frozen=True, slots=True)
class Result:
    """What one validation of files found: every problem (lines filled in, in report order),
    the run's report (its ``problems`` are the same list) and the number of files read."""

    problems: list[Problem]
    report: Report
    files: int


@dataclass(frozen=True, slots=True)
class _SchemaRef:
    key: str
    build: Callable[[], dict[str, Any]]
    label: str
    crd: bool


@dataclass(frozen=True, slots=True)
class Checked:
    """Documents checked one by one (:meth:`Engine.check`): everything but the cross-object rules."""

    objects: int  # documents given
    problems: list[Problem]  # documents that are not objects, rejected kinds
    checked: list[Document]  # the objects not skipped or rejected, in input order
    bad: dict[int, list[Problem]]  # an index into ``checked`` -> its problems
    cross: CrossObjects  # the facts of ``checked`` for the cross-object rules, each Service by its index there
    skipped: int
    missing: list[str]
    sources: dict[str, str]
    exit_on_error: bool = False

    def judge_cross(self) -> None:
        """Add the cross-object rules' problems over these documents alone."""
        for m, _, path, message in self.cross.problems():
            doc = self.checked[m]
            self.bad.setdefault(m, []).append(_problem(doc, doc.obj, path, message, RULE_SEMANTIC))

    def report(self) -> Report:
        """The report, problems in order (with ``exit_on_error``: only the first bad object's)."""
        problems = list(self.problems)
        for m in sorted(self.bad):
            problems.extend(self.bad[m])
            if self.exit_on_error:
                break
        problems.sort(key=object_key)  # stable: lines are known later (validate_paths)
        return Report(problems, self.objects, self.skipped, sorted(self.missing), dict(sorted(self.sources.items())))


class Engine:
    """The schemas and validators of one run (built-in set, CRD registry, compiled validators).

    Raises:
        UsageError: a bad ``kubernetes_version`` or CRD source.
    """

    def __init__(self, options: ValidateOptions = DEFAULT_OPTIONS) -> None:
        self.options = options
        root = options.cache_dir or cache.cache_root()
        self._builtins = builtin.schema_set(options.kubernetes_version)
        self._crds = CrdRegistry(root, options.crd_sources, use_fetched=options.use_fetched,
                                 use_bundled=options.use_bundled)
        self._cache = ValidatorCache(root)
        self._root = root
        self._skip, self._reject = _kind_filter(options.skip), _kind_filter(options.reject)

    def find(self, api_version: str, kind: str) -> _SchemaRef | None:
        """The schema for an apiVersion/Kind, or None."""
        api_kind = f"{api_version}/{kind}"
        b = self._builtins
        name = b.index(self._root).get(api_kind) if b is not None else None
        if b is not None and name is not None:
            return _SchemaRef(b.key(name), partial(b.build, name), b.label, False)
        found = self._crds.find(api_kind)
        return _SchemaRef(found.key, partial(self._crds.schema, found.key), found.source, True) if found else None

    def check(self, documents: Sequence[Document]) -> Checked:
        """Every problem of each document on its own, and the facts for the cross-object rules."""
        options = self.options
        problems: list[Problem] = []
        skipped = 0
        checked: list[Document] = []
        groups: dict[tuple[str, str], list[int]] = {}
        for doc in documents:
            obj = doc.obj
            if not isinstance(obj, dict):
                problems.append(_problem(doc, {}, (), f"expected a Kubernetes object (a mapping), got "
                                                      f"{show_typed(obj)}", RULE_OBJECT))
                continue
            api_version, kind = obj.get("apiVersion"), obj.get("kind")
            if not isinstance(api_version, str) or not api_version or not isinstance(kind, str) or not kind:
                what = [f for f, v in (("apiVersion", api_version), ("kind", kind)) if not isinstance(v, str) or not v]
                problems.append(_problem(doc, obj, (), f"not a Kubernetes object: missing {' and '.join(what)}",
                                         RULE_OBJECT))
                continue
            if self._skip and _matches(self._skip, api_version, kind):
                skipped += 1
                continue
            if self._reject and _matches(self._reject, api_version, kind):
                problems.append(_problem(doc, obj, ("kind",), f"{api_version}/{kind} is rejected (--reject)",
                                         RULE_OBJECT))
                continue
            groups.setdefault((api_version, kind), []).append(len(checked))
            checked.append(doc)
        bad: dict[int, list[Problem]] = {}
        missing: list[str] = []
        sources: dict[str, str] = {}
        for (api_version, kind), members in groups.items():
            found = self.find(api_version, kind)
            if found is None:
                missing.append(f"{api_version}/{kind}")
                if not options.ignore_missing_schemas:
                    for m in members:
                        bad.setdefault(m, []).append(_problem(
                            checked[m], checked[m].obj, ("kind",),
                            f"no schema for {api_version}/{kind} (Kubernetes {options.kubernetes_version}); pass its "
                            "CRD with --crd, or --ignore-missing-schemas to check only the semantic rules",
                            RULE_OBJECT))
                continue
            sources[f"{api_version}/{kind}"] = found.label
            self._check_schema(found, [(m, checked[m]) for m in members], bad)
            if options.exit_on_error and bad:
                break
        cross = CrossObjects()
        for m, doc in enumerate(checked):
            obj = doc.obj
            templates = pod_templates(obj)  # once for every rule set
            found_here = [_problem(doc, obj, p, msg, RULE_SEMANTIC) for p, msg in object_problems(obj, templates)]
            found_here += [_problem(doc, obj, p, msg, RULE_KUBERAY) for p, msg in kuberay_problems(obj, templates)]
            if kueue.judged(obj):  # its rules' module only for a queued job or a Kueue object
                found_here += [_problem(doc, obj, p, msg, RULE_KUEUE) for p, msg in kueue_problems(obj)]
            if found_here:
                bad.setdefault(m, []).extend(found_here)
            fact = facts_of(obj, templates)
            if fact is not None:
                cross.add(m, fact)
        return Checked(len(documents), problems, checked, bad, cross, skipped, missing, sources,
                       options.exit_on_error)

    def _check_schema(self, found: _SchemaRef, members: list[tuple[int, Document]],
                      bad: dict[int, list[Problem]]) -> None:
        """The schema problems of one kind's objects: the compiled gate says which fail, the
        collector lists every problem of those."""
        gate = self._cache.gate(found.key, found.build)
        failed = {m for m, doc in members if not gate(doc.obj)}
        b = self._builtins if found.crd else None  # a CRD leaves metadata open: the built-in ObjectMeta
        meta = (b.key(builtin.OBJECT_META), partial(b.build, builtin.OBJECT_META)) if b is not None else None
        if meta is not None:
            meta_gate = self._cache.gate(*meta)
            failed |= {m for m, doc in members if not meta_gate(doc.obj.get("metadata"))}
        if not failed:
            return

        collector = Collector(self._cache.schema(found.key, found.build))
        meta_collector = Collector(self._cache.schema(*meta)) if meta is not None else None
        for m, doc in members:
            if m not in failed:
                continue
            errors = collector.errors(doc.obj)
            if meta_collector is not None:
                errors = [e for e in errors if e[0][:1] != ("metadata",)]
                errors += meta_collector.errors(doc.obj.get("metadata"), ("metadata",))
            if not errors:  # the gate and the collector disagree on a keyword we do not model: fail closed
                errors = [((), "does not match its schema")]
            bad.setdefault(m, []).extend(_problem(doc, doc.obj, p, msg, RULE_SCHEMA) for p, msg in errors)


def validate_documents(documents: Sequence[Document], options: ValidateOptions = DEFAULT_OPTIONS) -> Report:
    """Validate documents read from files (see :func:`.reader.read_manifests`).

    Raises:
        UsageError: a bad ``kubernetes_version`` or CRD source.
    """
    checked = Engine(options).check(documents)
    checked.judge_cross()
    return checked.report()


def validate_report(objects: Sequence[dict[str, Any]], options: ValidateOptions = DEFAULT_OPTIONS) -> Report:
    """Validate in-memory objects (e.g. rendered ones); ``file`` is "" and ``doc_index`` the list index."""
    return validate_documents([Document("", i, (), obj, 0) for i, obj in enumerate(objects)], options)


def validate_objects(objects: Sequence[dict[str, Any]], options: ValidateOptions = DEFAULT_OPTIONS) -> list[Problem]:
    """Every problem of ``objects``."""
    return validate_report(objects, options).problems


def validate_files(paths: Sequence[str], options: ValidateOptions = DEFAULT_OPTIONS,
                   texts: dict[str, str] | None = None) -> Result:
    """Validate every manifest under ``paths`` (files, directories, ``-``) in this process;
    ``texts`` holds files already read (stdin can be read only once).

    Raises:
        UsageError: a missing path, an unreadable file, a bad option.
    """
    manifests = read_manifests(list(paths), texts)
    documents = manifests.documents
    if options.exit_on_error and manifests.problems:
        documents = []
    report = validate_documents(documents, options)
    problems = [*manifests.problems, *report.problems]
    if options.exit_on_error and problems:
        first = problems[0]
        problems = [p for p in problems if (p.file, p.doc_index) == (first.file, first.doc_index)]
    problems = add_lines(problems, manifests.texts, chunked=manifests.chunks)
    problems = in_report_order(problems)  # as the parallel path reports them (bulk._validate_parts)
    objects = count_objects(documents, manifests.problems)  # a document YAML cannot read is an invalid object
    return Result(problems, dataclasses.replace(report, problems=problems, objects=objects), manifests.files)


def identity(doc: Document) -> Problem:
    """A problem of ``doc`` with no path and no message yet: who it is (file, document, kind, name)."""
    return _problem(doc, doc.obj, (), "", RULE_SEMANTIC)


def cross_object_problems(cross: CrossObjects) -> list[Problem]:
    """The cross-object rules over facts whose Services are named by :func:`identity` (several
    parts' facts merged, each Service's document index shifted)."""
    return [dataclasses.replace(who, doc_index=who.doc_index + shift, path=(*who.path, *path), message=message)
            for who, shift, path, message in cross.problems()]


def _kind_filter(items: Iterable[str]) -> set[str]:
    return {part.strip() for item in items for part in item.split(",") if part.strip()}


def _matches(filters: set[str], api_version: str, kind: str) -> bool:
    """``Kind`` or ``apiVersion/Kind`` (``apps/v1/Deployment``, ``v1/Service``) matches."""
    return kind in filters or f"{api_version}/{kind}" in filters


def _problem(doc: Document, obj: dict[str, Any], path: JsonPath, message: str, rule: str) -> Problem:
    meta = as_mapping(obj.get("metadata"))
    name = meta.get("name") or meta.get("generateName") or ""
    return Problem(doc.file, doc.doc_index, str(obj.get("kind") or ""), str(name), (*doc.path, *path), message,
                   str(meta.get("namespace") or ""), rule)
