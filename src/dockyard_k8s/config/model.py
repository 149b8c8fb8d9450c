"""The resolved run: what every renderer and command works from (no I/O here).

``RunConfig.infra`` is typed by ``infra_types.InfraSpec`` (generated from the schema), so
mypy checks every ``infra["..."]`` lookup. Each infra value also knows where it came from
(:meth:`RunConfig.layer`, :meth:`RunConfig.locate`): the layer (shipped defaults, a platform
profile, the user defaults file, an infra file and its parents, ``--set``) and the file:line:col
it was written at. The renderers' provenance (``render/provenance.py``) maps a rendered field back
to the infra key, so a problem in a rendered object is reported where the user wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from dockyard_k8s.config.overrides import lookup
from dockyard_k8s.config.yamlio import Mark
from dockyard_k8s.errors import ConfigProblem
from dockyard_k8s.plain import Path, format_path

SHIPPED = "<shipped defaults>"

Fleet = Literal["trainer", "inference"]  # the GPU worker groups
Group = Literal["head", "trainer", "inference"]  # every GPU-side sizing section of kuberay
GPU_FLEETS: tuple[Fleet, ...] = ("trainer", "inference")

if TYPE_CHECKING:  # the generated TypedDicts are for the type checker: 60 classes not built at run time
    from dockyard_k8s.config.infra_types import InfraSpec, KuberayHead, KuberayTrainer

    PodSizing = KuberayHead | KuberayTrainer  # any of kuberay.head/trainer/inference


def locate(marks: Mapping[Path, Mark], key_marks: Mapping[Path, Mark], path: Path, *, at_key: bool = False) -> Mark:
    """Where ``path`` was written: the path itself (its key with ``at_key``), else the key of
    its closest written parent (a missing ``infra.image`` points at ``infra:``; a list item
    at the item), else the top of the file."""
    if at_key and path in key_marks:
        return key_marks[path]
    if path in marks:
        return marks[path]
    for end in range(len(path) - 1, 0, -1):
        if path[:end] in key_marks:
            return key_marks[path[:end]]
        if isinstance(path[end - 1], int) and path[:end] in marks:
            return marks[path[:end]]
    return marks.get((), Mark(SHIPPED, 0, 0))


def problem_at(marks: Mapping[Path, Mark], key_marks: Mapping[Path, Mark], path: Path, message: str, *,
               at_key: bool = False) -> ConfigProblem:
    """A problem about ``path``, at the place :func:`locate` finds."""
    mark = locate(marks, key_marks, path, at_key=at_key)
    return ConfigProblem(mark.file, mark.line, mark.col, format_path(path), message)


def layer_name(file: str) -> str:
    """How a message names the layer a value came from (its Mark's ``file``)."""
    if file == SHIPPED:
        return "the shipped defaults"
    if file.startswith("<") and file.endswith(">"):
        return f"the {file[1:-1]}"  # <eks profile p5.48xlarge>
    if file.startswith("--set"):
        return f"`{file}`"
    return file


@dataclass(frozen=True, slots=True)
class RunConfig:
    """A run, fully resolved."""

    infra: InfraSpec  # the infra spec, every default filled in, validated
    recipe: dict[str, Any]  # the recipe with parents merged and overrides applied
    recipe_file: str
    job_args: list[str]  # overrides as the job receives them (idempotent form)
    sources: list[str]  # files merged, lowest layer first
    marks: dict[Path, Mark]  # where each infra value was written
    key_marks: dict[Path, Mark]  # where each infra key was written
    added_args: tuple[str, ...] = ()  # the job_args the launcher added (not the user's overrides)
    infra_files: tuple[str, ...] = ()  # the infra files given (or found beside the recipe), in order
    notes: tuple[str, ...] = ()  # what the loader decided for the user and wants said

    @property
    def name(self) -> str:
        """The run's name (``launch.name``): every object's name and ``dockyard-k8s/run`` label."""
        return str(self.infra["launch"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.infra["infra"]["namespace"])

    def locate(self, path: Path, message: str, *, at_key: bool = False) -> ConfigProblem:
        """A problem about infra key ``path``, at the place the user wrote it (its key with
        ``at_key``: for a key that should not be there)."""
        if path == ("launch", "name") and path not in self.marks:
            return ConfigProblem(self.recipe_file, 0, 0, format_path(path),
                                 message + " (the run name defaults to the recipe file name; set launch.name)")
        return problem_at(self.marks, self.key_marks, path, message, at_key=at_key)

    def layer(self, path: Path) -> str:
        """The layer that set the value at ``path``: a file, ``<kind profile>``, ``--set ...``, or
        ``<shipped defaults>`` (also for values derived from other keys)."""
        for end in range(len(path), 0, -1):
            mark = self.marks.get(path[:end])
            if mark is not None:
                # a mapping merges key by key: a key no layer wrote under it is a default
                merged = end < len(path) and isinstance(lookup(self.infra, path[:end])[1], dict)
                return SHIPPED if merged else mark.file
        return SHIPPED

    def written_by_user(self, path: Path) -> bool:
        """True when a user layer (a defaults or infra file, --set) set ``path``, not the
        shipped defaults or a platform profile."""
        file = self.layer(path)
        return not (file.startswith("<") and file.endswith(">"))  # SHIPPED is <shipped defaults>
