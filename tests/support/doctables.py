"""The tables docs/plan.md and docs/lint.md carry, generated from the code: a test keeps each
file in sync (regenerate the section with the function when it fails)."""

from __future__ import annotations

from dockyard_k8s.lint.registry import FAMILY_OF, RULES, _severity
from dockyard_k8s.plan.catalog import AWS, EXPLICIT, GPU, MI, eks_allocatable


def catalog_markdown() -> str:
    """The instance-type table of docs/plan.md, from the catalogue."""
    lines = ["| instance type | vCPU | memory | GPUs | EFA | allocatable cpu | allocatable memory | max pods |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, c in AWS.items():
        a = eks_allocatable(c)
        gpu = f"{c.gpus} x {c.gpu_name}" if c.gpus else "-"
        lines.append(f"| `{name}` | {c.vcpu} | {c.memory_mib // 1024} GiB | {gpu} | {c.efa or '-'} | {a['cpu']}m | "
                     f"{a['memory'] // MI}Mi | {a['pods']} |")
    for name, e in EXPLICIT.items():
        lines.append(f"| `{name}` | - | - | {e.get(GPU, '-')} x A10 24GB | - | {e['cpu']} | {e['memory']} | "
                     f"{e['pods']} |")
    return "\n".join(lines) + "\n"


def rules_markdown() -> str:
    """The rule table of docs/lint.md, from the registry."""
    lines = ["| rule | family | severity | what it checks | follows |", "| --- | --- | --- | --- | --- |"]
    for r in RULES:
        sev = r.severity + (f" ({r.untrusted_severity} on untrusted pods)" if r.untrusted_severity else "")
        lines.append(f"| [`{r.id}`](#{r.id}) | {FAMILY_OF[r.id]} | {sev} | {r.title} | {', '.join(r.anchors)} |")
    lines.append("")
    for r in RULES:
        lines += [f"### {r.id}", "", f"**{r.title}** ({_severity(r)})", "", r.doc, ""]
    return "\n".join(lines)
