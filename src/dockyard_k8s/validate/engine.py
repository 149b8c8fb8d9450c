"""The validation engine: objects in, every problem out.

For each object: pick its schema (built-in for the Kubernetes version, or a CRD), run the
compiled fast-fail validator, and on failure the collecting walker for every problem;
then the semantic rules (:mod:`.semantic`), for RayJob/RayCluster the KubeRay operator
rules (:mod:`.kuberay`) and, for a job queued with Kueue, its webhook's (:mod:`.kueue`).
Objects are grouped by kind so each validator is loaded once, and only for the kinds present.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from dockyard_k8s.kube import pod_templates
from dockyard_k8s.validate import builtin, cache
from dockyard_k8s.validate.compiled import BULK_THRESHOLD, ValidatorCache
from dockyard_k8s.validate.crd import CrdRegistry
from dockyard_k8s.validate.kuberay import kuberay_problems
from dockyard_k8s.validate.kueue import kueue_problems
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
)
from dockyard_k8s.validate.semantic import CrossObjects, bundle_facts, object_problems

_OBJECT_META_KEY = "ObjectMeta"


def _kind_filter(items: Iterable[str]) -> set[str]:
    return {part.strip() for item in items for part in item.split(",") if part.strip()}


def _matches(filters: set[str], api_version: str, kind: str) -> bool:
    """``Kind`` or ``apiVersion/Kind`` (``apps/v1/Deployment``, ``v1/Service``) matches."""
    return kind in filters or f"{api_version}/{kind}" in filters


# The schema lookup of the run in progress, shared by the parts of a large input (setting it
# up reads indexes and lists CRD directories: ~2 ms a part). validate_paths empties it first.
PART_SCHEMAS: dict[tuple[Any, ...], _Schemas] = {}


class _SchemaRef(NamedTuple):
    key: str
    build: Callable[[], dict[str, Any]]
    label: str
    crd: bool


class _Schemas:
    """Schema lookup + compiled validators for one run."""

    def __init__(self, kubernetes_version: str, crd_sources: Sequence[str], root: str,
                 use_fetched: bool, use_bundled: bool) -> None:
        self.builtins = builtin.schema_set(kubernetes_version)
        self.crds = CrdRegistry(root, crd_sources, use_fetched=use_fetched, use_bundled=use_bundled)
        self.cache = ValidatorCache(root)
        self.root = root

    def find(self, api_version: str, kind: str) -> _SchemaRef | None:
        """The schema for an apiVersion/Kind, or None."""
        api_kind = f"{api_version}/{kind}"
        if self.builtins is not None:
            name = self.builtins.index(self.root).get(api_kind)
            if name is not None:
                b = self.builtins
                return _SchemaRef(b.key(name), lambda: b.build(name), b.label, False)
        found = self.crds.table().get(api_kind)
        if found is not None:
            key = found.key

            def build() -> dict[str, Any]:
                schema = self.crds.built(key)
                if schema is None:  # the memo knows the kind but the converted schema file is gone
                    self.crds._memo = {}
                    self.crds._table = None
                    self.crds.table()
                    schema = self.crds.built(key)
                if schema is None:
                    raise RuntimeError(f"CRD schema for {api_kind} vanished from the cache")
                return schema

            return _SchemaRef(key, build, found.source, True)
        return None

    def object_meta(self) -> tuple[str, Any] | None:
        if self.builtins is None:
            return None
        b = self.builtins
        return b.key(builtin.OBJECT_META), lambda: b.build(builtin.OBJECT_META)


def validate_documents(
    documents: Sequence[Document],
    *,
    kubernetes_version: str = builtin.DEFAULT_KUBERNETES_VERSION,
    crd_sources: Sequence[str] = (),
    skip: Iterable[str] = (),
    reject: Iterable[str] = (),
    ignore_missing_schemas: bool = False,
    use_fetched: bool = True,
    use_bundled: bool = True,
    cache_dir: str | None = None,
    exit_on_error: bool = False,
    cross: CrossObjects | None = None,
    large: bool = False,
) -> Report:
    """Validate documents read from files (see :func:`.reader.read_manifests`).

    Args:
        kubernetes_version: selects the built-in schemas (newest shipped version <= it).
        crd_sources: CRD files or directories, searched before the cached and bundled CRDs.
        skip: ``Kind`` or ``apiVersion/Kind`` names not to validate at all.
        reject: names that are an error wherever they appear.
        ignore_missing_schemas: an object with no schema is not an error (it still gets the
            semantic and KubeRay rules).
        use_fetched / use_bundled: consult CRDs from ``schemas fetch`` / shipped with dockyard-k8s.
        cache_dir: cache root (default ``$XDG_CACHE_HOME/dockyard-k8s``).
        exit_on_error: stop after the first object with a problem.
        cross: when given, the cross-object rules are not run here: each checked object's
            facts go into it instead (a Service's with its identity: a :class:`Problem`
            without a message), to be judged with other parts' by
            :func:`cross_object_problems`.
        large: the documents are one part of a large input: use the bulk validators
            (jsonschema-rs) whatever the number of objects of a kind here, and the schema
            lookup of the run's other parts (:data:`PART_SCHEMAS`).

    Raises:
        UsageError: a bad ``kubernetes_version`` or CRD source.
    """
    root = cache_dir or cache.cache_root()
    skip_set, reject_set = _kind_filter(skip), _kind_filter(reject)
    memo_key = (kubernetes_version, tuple(crd_sources), root, use_fetched, use_bundled)
    schemas = PART_SCHEMAS.get(memo_key) if large else None
    if schemas is None:
        schemas = _Schemas(kubernetes_version, crd_sources, root, use_fetched, use_bundled)
        if large:
            PART_SCHEMAS[memo_key] = schemas
    problems: list[Problem] = []
    missing: list[str] = []
    sources: dict[str, str] = {}
    skipped = 0
    checked: list[Document] = []
    groups: dict[tuple[str, str], list[int]] = {}
    for doc in documents:
        obj = doc.obj
        if not isinstance(obj, dict):
            problems.append(_problem(doc, {}, (), f"expected a Kubernetes object (a mapping), got "
                                                  f"{type(obj).__name__}", RULE_OBJECT))
            continue
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not api_version or not isinstance(kind, str) or not kind:
            what = [f for f, v in (("apiVersion", api_version), ("kind", kind)) if not isinstance(v, str) or not v]
            problems.append(_problem(doc, obj, (), f"not a Kubernetes object: missing {' and '.join(what)}",
                                     RULE_OBJECT))
            continue
        if skip_set and _matches(skip_set, api_version, kind):
            skipped += 1
            continue
        if reject_set and _matches(reject_set, api_version, kind):
            problems.append(_problem(doc, obj, ("kind",), f"{api_version}/{kind} is rejected (--reject)", RULE_OBJECT))
            continue
        groups.setdefault((api_version, kind), []).append(len(checked))
        checked.append(doc)
    bad: dict[int, list[Problem]] = {}
    for (api_version, kind), members in groups.items():
        found = schemas.find(api_version, kind)
        if found is None:
            missing.append(f"{api_version}/{kind}")
            if not ignore_missing_schemas:
                for m in members:
                    bad.setdefault(m, []).append(_problem(
                        checked[m], checked[m].obj, ("kind",),
                        f"no schema for {api_version}/{kind} (Kubernetes {kubernetes_version}); pass its CRD with "
                        "--crd, or --ignore-missing-schemas to check only the semantic rules", RULE_OBJECT))
            continue
        key, build = found.key, found.build
        sources[f"{api_version}/{kind}"] = found.label
        count = BULK_THRESHOLD if large else len(members)
        gate = schemas.cache.gate(key, build, count)
        failed = [m for m in members if not gate(checked[m].obj)]
        meta_gate = None
        if found.crd:  # the CRD schema leaves metadata open: check it against the built-in ObjectMeta
            meta = schemas.object_meta()
            if meta is not None:
                meta_key, meta_build = meta
                meta_gate = schemas.cache.gate(meta_key, meta_build, count)
                failed = sorted(set(failed) | {m for m in members if not meta_gate(checked[m].obj.get("metadata"))})
        if failed:
            from dockyard_k8s.validate.collect import Collector

            collector = Collector(schemas.cache.schema(key, build))
            where = schemas.cache.error_paths(key)  # jsonschema-rs: walk only towards its errors
            meta_collector = None
            if meta_gate is not None:
                meta = schemas.object_meta()
                assert meta is not None
                meta_collector = Collector(schemas.cache.schema(*meta))
            for m in failed:
                doc = checked[m]
                errors = collector.errors(doc.obj, where=where(doc.obj) if where is not None else None)
                if meta_collector is not None:
                    errors = [e for e in errors if e[0][:1] != ("metadata",)]
                    errors += meta_collector.errors(doc.obj.get("metadata"), ("metadata",))
                if not errors:  # the engines disagree on a keyword we do not model: still fail closed
                    errors = [((), "does not match its schema")]
                bad.setdefault(m, []).extend(_problem(doc, doc.obj, p, msg, RULE_SCHEMA) for p, msg in errors)
        if exit_on_error and bad:
            break
    index = CrossObjects() if cross is None else cross
    for m, doc in enumerate(checked):
        obj = doc.obj
        templates = pod_templates(obj)  # once for all three rule sets
        found_here = [_problem(doc, obj, p, msg, RULE_SEMANTIC) for p, msg in object_problems(obj, templates)]
        found_here += [_problem(doc, obj, p, msg, RULE_KUBERAY) for p, msg in kuberay_problems(obj, templates)]
        found_here += [_problem(doc, obj, p, msg, RULE_KUEUE) for p, msg in kueue_problems(obj)]
        if found_here:
            bad.setdefault(m, []).extend(found_here)
        fact = bundle_facts(obj, templates)
        if fact is not None:  # a Service is reported by its index here, by its identity across parts
            who = m if cross is None else _problem(doc, obj, (), "", RULE_SEMANTIC) if fact[0] == "service" else None
            index.add(who, fact)
    if cross is None:
        for m, _, path, msg in index.problems():
            bad.setdefault(m, []).append(_problem(checked[m], checked[m].obj, path, msg, RULE_SEMANTIC))
    for m in sorted(bad):
        problems.extend(bad[m])
        if exit_on_error:
            break
    problems.sort(key=problem_order)
    return Report(problems, len(documents), skipped, sorted(missing), dict(sorted(sources.items())))


def problem_order(p: Problem) -> tuple[str, int, JsonPath]:
    """Problems sort by file, document, and List item (stable: an object's own order is kept)."""
    return p.file, p.doc_index, p.path[:2] if p.path[:1] == ("items",) else ()


def cross_object_problems(cross: CrossObjects) -> list[Problem]:
    """The cross-object rules over facts gathered by ``validate_documents(..., cross=...)``."""
    return [who._replace(doc_index=who.doc_index + shift, path=(*who.path, *path), message=message)
            for who, shift, path, message in cross.problems()]


def _problem(doc: Document, obj: dict[str, Any], path: JsonPath, message: str, rule: str) -> Problem:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = (meta or {}).get("name") or (meta or {}).get("generateName") or ""
    return Problem(doc.file, doc.doc_index, str(obj.get("kind") or ""), str(name), (*doc.path, *path), message,
                   str((meta or {}).get("namespace") or ""), rule)


def validate_report(objects: Sequence[dict[str, Any]], **options: Any) -> Report:
    """Validate in-memory objects (e.g. rendered ones); ``file`` is "" and ``doc_index`` the list index."""
    return validate_documents([Document("", i, (), obj, 0) for i, obj in enumerate(objects)], **options)


def validate_objects(objects: Sequence[dict[str, Any]], **options: Any) -> list[Problem]:
    """Every problem of ``objects``; see :func:`validate_documents` for the options."""
    return validate_report(objects, **options).problems
