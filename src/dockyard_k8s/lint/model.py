"""The data lint works with: rules, findings, the objects being linted and the settings.

A :class:`Rule` is data: an id, a default severity, a one-line title, a paragraph that
says why it matters and how to fix it, the published policies it follows (anchors), and
a check function. A check looks at one object (with the whole input in view) and yields
:class:`Hit` values; the engine turns them into :class:`Finding` values, applies
suppressions and sorts them. Nothing here raises for a bad manifest: odd shapes are
skipped, because the schema validator is the place that reports them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dockyard_k8s.config.platforms import KNOWN_GPU_NODE_LABELS
from dockyard_k8s.kube import (
    GPU_RESOURCES,
    PodTemplate,
    as_mapping,
    format_ref,
    parse_quantity,
    pod_requests,
    pod_templates,
    selector_matches,
)
from dockyard_k8s.lint.isolation import ERROR, WARNING, runs_untrusted, str_map
from dockyard_k8s.manifests import Source
from dockyard_k8s.plain import Path, dig

INFO = "info"  # ERROR and WARNING come from isolation.py, which check imports without this module
SEVERITIES = (ERROR, WARNING, INFO)  # most severe first
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}

IGNORE_ANNOTATION = "dockyard-k8s/lint-ignore"
EFA_RESOURCE = "vpc.amazonaws.com/efa"


@dataclass(frozen=True, slots=True)
class Hit:
    """What a check reports: where (JSON path in the object), what, and optionally a
    severity other than the rule's default."""

    path: Path
    message: str
    severity: str | None = None


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    title: str
    doc: str  # one paragraph: why it matters, then how to fix it
    anchors: tuple[str, ...]
    check: Callable[[Obj, Context], Iterable[Hit]] = field(repr=False, compare=False)
    untrusted_severity: str | None = None  # severity when the pod runs untrusted code (documented)


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    object: str  # "Kind namespace/name"
    path: Path
    message: str
    source: Source | None = None
    line: int = 0  # 1-based line in source.file, 0 when unknown

    def sort_key(self) -> tuple[Any, ...]:
        src = (self.source.file, self.source.document) if self.source else ("", 0)
        path = tuple((0, f"{p:09d}") if isinstance(p, int) else (1, p) for p in self.path)
        return (*src, self.object, SEVERITY_RANK[self.severity], self.rule, path, self.message)


@dataclass(frozen=True, slots=True)
class Suppression:
    rule: str
    object: str
    by: str  # "lint.ignore" or "annotation on <object>"


@dataclass(frozen=True)
class LintConfig:
    """The ``lint:`` section of the infra spec (defaults = the shipped ones)."""

    ignore: tuple[str, ...] = ()
    shm_per_gpu: Fraction = Fraction(8 * 2**30)
    gpu_runtime_class: str | None = None
    cold_pull_seconds: int = 600
    # Labels that mark a GPU node (label, value; "*": any value): the well-known ones and infra.cpuScheduling's.
    gpu_node_labels: tuple[tuple[str, str], ...] = tuple(KNOWN_GPU_NODE_LABELS.items())

    @classmethod
    def from_section(cls, section: dict[str, Any]) -> LintConfig:
        shm = parse_quantity(section.get("shmPerGpu", "8Gi"))
        labels = {**KNOWN_GPU_NODE_LABELS, **(section.get("gpuNodeLabels") or {})}
        return cls(ignore=tuple(section.get("ignore") or ()),
                   shm_per_gpu=shm if shm is not None else Fraction(8 * 2**30),
                   gpu_runtime_class=section.get("gpuRuntimeClass"),
                   cold_pull_seconds=int(section.get("coldPullSeconds", 600)),
                   gpu_node_labels=tuple((str(k), str(v)) for k, v in labels.items()))


# --- the objects under lint ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pod:
    """A pod template of an object, with what rules ask of it precomputed."""

    template: PodTemplate
    spec_path: Path  # JSON path of the pod spec inside the object
    labels: dict[str, str]
    annotations: dict[str, str]
    namespace: str
    untrusted: bool
    gpus: Fraction
    requests: dict[str, Fraction]

    @property
    def spec(self) -> dict[str, Any]:
        return self.template.spec

    def at(self, *parts: str | int) -> Path:
        return (*self.spec_path, *parts)

    def containers(self, *fields: str) -> Iterator[tuple[Path, dict[str, Any]]]:
        """(path, container) for init, app and ephemeral containers (those of ``fields`` when given)."""
        for field_name in fields or ("initContainers", "containers", "ephemeralContainers"):
            items = self.spec.get(field_name)
            for i, c in enumerate(items if isinstance(items, list) else []):
                if isinstance(c, dict):
                    yield self.at(field_name, i), c


class Obj:
    """One object under lint, with its pod templates."""

    def __init__(self, data: dict[str, Any], source: Source | None = None) -> None:
        self.data = data
        self.source = source
        meta = as_mapping(data.get("metadata"))
        self.kind = str(data.get("kind", ""))
        self.name = str(meta.get("name", ""))
        self.namespace = str(meta.get("namespace") or "")
        self.annotations = str_map(meta.get("annotations"))
        self.pods: list[Pod] = []
        for t in pod_templates(data):
            labels, annotations = str_map(t.metadata.get("labels")), str_map(t.metadata.get("annotations"))
            untrusted = runs_untrusted(labels, annotations, self.annotations)
            requests = pod_requests(t.spec)
            gpus = sum((requests.get(r, Fraction(0)) for r in GPU_RESOURCES), Fraction(0))
            self.pods.append(Pod(t, (*t.path, "spec"), labels, annotations, self.namespace, untrusted, gpus, requests))

    @property
    def ref(self) -> str:
        """``Kind namespace/name`` (``Kind name`` without a namespace)."""
        return format_ref(self.kind, self.namespace, self.name)

    def get(self, *path: str | int) -> Any:
        return dig(self.data, *path)


@dataclass(frozen=True, slots=True)
class Context:
    """The whole input, for rules that look across objects (NetworkPolicy coverage...)."""

    objects: list[Obj]
    config: LintConfig

    def of_kind(self, *kinds: str) -> list[Obj]:
        return [o for o in self.objects if o.kind in kinds]

    def selecting(self, kind: str, pod: Pod, selector_of: Callable[[Obj], Any]) -> list[Obj]:
        """Objects of ``kind`` in the pod's namespace whose selector selects the pod."""
        return [o for o in self.of_kind(kind)
                if o.namespace == pod.namespace and selector_matches(selector_of(o), pod.labels)]

    def pods(self) -> Iterator[tuple[Obj, Pod]]:
        for o in self.objects:
            for p in o.pods:
                yield o, p
