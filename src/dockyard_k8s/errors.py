"""Every error dockyard-k8s raises on purpose, and the exit code each maps to.

    DockyardError                 base class; carries ``exit_code``
    ├── UsageError                bad command-line usage                         exit 2
    ├── ConfigError               recipe / infra problems, all of them at once   exit 2
    ├── ManifestError             rendered objects failed validation             exit 1
    └── ClusterError              the cluster refused or failed a request        exit 1

Results that are *findings* rather than failures (validation problems of
arbitrary manifests, lint findings) are plain data, not exceptions.

Exit codes used by every command (documented in the README):

    0   success
    1   the thing checked is wrong or failed: invalid manifests, lint errors,
        a failed job, a doctor check that fails, an API error
    2   bad input: unreadable or invalid recipe/infra file, bad flags
    130 interrupted (Ctrl-C)
"""

from __future__ import annotations

from dataclasses import dataclass

EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130

# What code that reads a manifest's fields as its schema defines them raises on a field of
# another type (a list where a mapping goes...): lint and plan turn it into a message.
MALFORMED_DATA = (TypeError, AttributeError, ValueError, KeyError, IndexError)


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    """One problem in an input file, located as precisely as we can."""

    file: str
    line: int  # 1-based; 0 when unknown (a missing file)
    col: int  # 1-based; 0 when unknown
    path: str  # the dotted key path (``kuberay.trainer.replicas``), "" for the whole file
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.col}" if self.line else self.file
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class DockyardError(Exception):
    """Base class of every error the CLI turns into a message and an exit code."""

    exit_code = EXIT_FAILURE

    def render(self) -> str:
        """The text printed to stderr for this error."""
        return f"error: {self}"


class UsageError(DockyardError):
    """The command line itself is wrong (unknown flag value, missing argument)."""

    exit_code = EXIT_BAD_INPUT


class ConfigError(DockyardError):
    """One or more problems in the recipe / infra spec; all are reported together."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, problems: list[ConfigProblem]) -> None:
        self.problems = sorted(set(problems), key=lambda p: (p.file, p.line, p.col, p.path, p.message))
        super().__init__(f"{len(self.problems)} problem(s) in the configuration")

    def render(self) -> str:
        return "\n".join([*map(str, self.problems),
                          f"{len(self.problems)} problem(s); nothing was rendered or applied."])


class ManifestError(DockyardError):
    """Rendered objects failed validation: the run is not safe to apply (fail closed)."""

    exit_code = EXIT_FAILURE

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__(f"{len(lines)} problem(s) in the rendered objects")

    def render(self) -> str:
        return "\n".join([*self.lines, f"{len(self.lines)} problem(s) in the rendered objects; nothing applied."])


class ClusterError(DockyardError):
    """The Kubernetes API (or the Ray dashboard) refused or failed a request.

    ``obj`` names the object involved (``RayJob dockyard/grpo-swe``) when there is one.
    """

    exit_code = EXIT_FAILURE

    def __init__(self, message: str, *, obj: str = "", status: int = 0, hint: str = "") -> None:
        self.obj = obj
        self.status = status
        self.hint = hint
        super().__init__(message)

    def render(self) -> str:
        head = f"error: {self.obj}: {self}" if self.obj else f"error: {self}"
        return f"{head}\nhint: {self.hint}" if self.hint else head
