"""`check` on a plain config starts without the modules it does not need.

shutil comes with argparse's default help formatter; the collecting
validator only runs for objects that fail their schema gate; the scheduler loop is plan's alone;
output.py and render/submission.py serve
``--output-file`` and attach runs only; Kueue's webhook rules only objects Kueue judges.
"""

from __future__ import annotations

import subprocess
import sys

from support.paths import EXAMPLES

AVOIDED = ("shutil", "dockyard_k8s.validate.collect", "fastjsonschema", "shtab",
           "dockyard_k8s.plan.schedule", "dockyard_k8s.render.kueue", "dockyard_k8s.output",
           "dockyard_k8s.render.submission", "dockyard_k8s.validate.kueue",
           "dockyard_k8s.validate.crd_convert")
# and for a RayJob run, the operator-free shapes (a StatefulSet run needs them)
RAYJOB_AVOIDED = (*AVOIDED, "dockyard_k8s.render.shapes")

PROBE = """
import sys
from dockyard_k8s.cli import main
code = main(["check", {recipe!r}, "--infra", {infra!r}])
print("LOADED=" + ",".join(sorted(m for m in {avoided!r} if m in sys.modules)))
sys.exit(code)
"""


def _loaded(recipe: str, infra: str, avoided: tuple[str, ...] = AVOIDED) -> list[str]:
    code = PROBE.format(recipe=str(EXAMPLES / recipe), infra=str(EXAMPLES / infra), avoided=avoided)
    # the first run fills the validator cache (compiling imports fastjsonschema); the second is measured
    subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("LOADED="))
    return [m for m in line[len("LOADED="):].split(",") if m]


def test_check_of_the_example_imports_none_of_the_avoided_modules() -> None:
    assert _loaded("grpo_swe.yaml", "grpo_swe.infra.yaml", RAYJOB_AVOIDED) == []


def test_check_of_a_statefulset_run_reads_its_bootstrap_script_cheaply() -> None:
    """The eks example renders StatefulSets with the bootstrap script: no importlib.resources
    (tempfile, shutil, random)."""
    assert _loaded("grpo_swe.yaml", "eks_p5.infra.yaml") == []


def test_check_of_a_queued_run_loads_kueues_modules() -> None:
    """A Kueue run needs render/kueue.py and Kueue's rules."""
    avoided = ("fastjsonschema", "dockyard_k8s.plan.schedule",
               "dockyard_k8s.render.kueue")
    assert _loaded("grpo_swe.yaml", "grpo_swe_kueue.infra.yaml", avoided) == ["dockyard_k8s.render.kueue"]
