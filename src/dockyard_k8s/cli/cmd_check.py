"""``dockyard-k8s check``: validate a recipe + infra pair and print a one-page summary."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from dockyard_k8s.bundle import Bundle, Findings
from dockyard_k8s.cli._output import OK, WARN, add_output_arg, check_output_paths, prerequisite_section, table
from dockyard_k8s.cli._runargs import RUN_ARGS_HELP, add_run_args, load_bundle
from dockyard_k8s.kube import object_ref
from dockyard_k8s.output import document_path, document_text, write_document
from dockyard_k8s.render.kueue import kueue_summary
from dockyard_k8s.render.network import ray_ports_line, sandbox_rows
from dockyard_k8s.render.platform import cpu_placement_line
from dockyard_k8s.render.record import launch_objects
from dockyard_k8s.render.submission import attach_recipe_path

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec
    from dockyard_k8s.config.model import PodSizing

EXAMPLES = """\
examples:
  dockyard-k8s check examples/grpo_swe.yaml --infra examples/grpo_swe.infra.yaml
  dockyard-k8s check examples/grpo_swe.yaml --set kuberay.trainer.replicas=4 optimizer.lr=3e-6
  dockyard-k8s check examples/grpo_swe.yaml --output-file bundle.yaml   # also write resolved config + objects
  dockyard-k8s check examples/grpo_swe.yaml -o json | jq .config.kuberay   # print them instead of the summary
"""


def register(sub: Any) -> None:
    p = sub.add_parser("check",
                       description="Validate both files, render every object, check them, and print a "
                                   "one-page summary. Nothing is sent to a cluster.",
                       epilog=RUN_ARGS_HELP + "\n" + EXAMPLES)
    add_run_args(p)
    add_output_arg(p, ("text", "json", "yaml"),
                   help_extra="; json/yaml print the resolved config and the rendered objects")
    p.add_argument("--output-file", metavar="FILE.yaml|FILE.json",
                   help="also write the resolved config and the rendered objects to FILE")


def run(args: argparse.Namespace) -> int:
    out = args.output_file
    if out:
        document_path(out)
    check_output_paths(args)
    bundle = load_bundle(args)
    doc = {"config": bundle.run.infra, "recipe": bundle.run.recipe, "objects": bundle.objects}
    if args.output != "text":  # json or yaml: the document instead of the summary
        print(document_text(doc, args.output), end="")
    if out:
        write_document(out, doc)
    if args.output != "text":
        return 0
    print(summary(bundle))
    for note in bundle.run.notes:
        print(f"note: {note}")
    print(f"\n{WARN if bundle.validation.missing else OK} {bundle.validation.coverage()}")
    if out:
        print(f"wrote {out}")
    return 0


# How the fleets are laid out, by launch.mode (the others: one RayCluster).
_SHAPE_TITLES = {
    "job": "(one Job pod: head and every fleet on a single node, no operator)",
    "statefulset": "(StatefulSets, no operator; the Ray head runs on trainer pod 0)",
}


def _fleet_row(name: str, s: PodSizing, replicas: int) -> list[Any]:
    total = replicas * s["gpus"]
    return [name, replicas, s["gpus"], s["cpu"], s["memory"], s["shmSize"] or "-",
            ",".join(f"{k}={v}" for k, v in s["nodeSelector"].items()) or "-", total]


def _urls(infra: InfraSpec) -> str:
    if not infra["sandbox"]["injectUrls"]:
        return "not injected"
    if infra["launch"]["mode"] == "attach":
        return "passed to the attached cluster's Ray job as DOCKYARD_SANDBOX_URLS (runtime_env.env_vars)"
    return "injected into GPU pods as DOCKYARD_SANDBOX_URLS"


def _fit_lines(found: Findings) -> list[str]:
    """What the one-node fit test could not judge (docs/hardware-deferred-validation.md HV-PLAN-7):
    GPU pods without a known instance type, and one that asks for more GPUs than any known node has."""
    unchecked = found.unchecked
    if not unchecked:
        return []
    why = ["no instance type declared"] if any(not u.instance_type for u in unchecked) else []
    why += [f"{t} is neither in the catalogue nor under plan.instanceTypes"
            for t in sorted({u.instance_type for u in unchecked if u.instance_type})]
    groups = [g for g in dict.fromkeys(u.group for u in unchecked) if g != "job"]
    who = " and ".join([*(["the Job's one pod"] if any(u.group == "job" for u in unchecked) else []),
                        *([f"the {', '.join(groups)} pods"] if groups else [])])
    how = ("With node.kubernetes.io/instance-type in a fleet's nodeSelector (eks: infra.instanceType), check tests "
           "each pod against one node of that type" if any(not u.instance_type for u in unchecked) else
           "Declared under plan.instanceTypes (allocatable as `kubectl describe node` shows it), check tests each "
           "pod against one node of it")
    lines = [f"  node fit: not checked for {who} ({'; '.join(why)}). {how}; `dockyard-k8s plan` places them on "
             "plan.nodePools or --nodes"]
    most, names = found.most_gpus
    for u in unchecked:
        if u.gpus > most:
            article = "an" if u.group[:1] in "aeiou" else "a"
            one = "the Job's one pod" if u.group == "job" else f"{article} {u.group} pod"
            known = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
            lines.append(f"{WARN} {one} asks for {u.gpus} GPUs: no instance type dockyard-k8s knows has more than "
                         f"{most} ({known}), so it runs only on a node with {u.gpus} (declare that node under "
                         "plan.instanceTypes and select it, and check tests the fit)")
    return lines


def summary(bundle: Bundle) -> str:
    run, objects, found = bundle.run, bundle.objects, bundle.findings
    infra = run.infra
    launch, kr, sb = infra["launch"], infra["kuberay"], infra["sandbox"]
    applied = launch_objects(run, objects)  # what `render` writes and `run` applies (the token Secret aside)
    lines = [f"{OK} {launch['name']}: configuration valid, {len(applied)} objects rendered"]
    mine = len(run.job_args) - len(run.added_args)
    overrides = f" (+{mine} override(s) passed to the job)" if mine else ""
    rows: list[list[Any]] = [
        ["recipe", f"{run.recipe_file}{overrides}"],
        ["infra", " < ".join(run.sources)],
        ["namespace", infra["infra"]["namespace"]],
        ["image", f"{infra['infra']['image']} ({infra['infra']['imagePullPolicy']})"],
        ["mode", launch["mode"] + (f" ({launch['submissionMode']})" if launch["mode"] == "rayjob" else "")],
    ]
    for arg in run.added_args:
        rows.append(["job gets", f"{arg} (appended: the recipe has {arg[2:].split('=')[0]}, and the injected "
                                 "DOCKYARD_SANDBOX_URLS must win over it; launch.sandboxUrlsKey: null turns "
                                 "this off)"])
    if infra["infra"]["platform"] != "generic":
        rows.append(["platform", infra["infra"]["platform"] + (f" ({infra['infra']['instanceType']})"
                                                              if infra["infra"]["instanceType"] else "")])
    if infra["infra"]["priorityClassName"]:
        rows.append(["priority", infra["infra"]["priorityClassName"]])
    if launch["mode"] == "attach":
        rows.append(["attach to", launch["attach"]["cluster"] or launch["attach"]["address"]])
    if infra["infra"]["kueue"]["queueName"]:
        rows.append(["kueue", kueue_summary(infra, objects)])
    lines.append(table(rows, indent="  "))
    if launch["mode"] != "attach":
        fleets = [_fleet_row("head", kr["head"], 1)]
        fleets += [_fleet_row(role, kr[role], kr[role]["replicas"]) for role in ("trainer", "inference")]
        total = sum(r[-1] for r in fleets)
        lines.append("\nGPU fleets " + _SHAPE_TITLES.get(launch["mode"], "(one RayCluster)"))
        lines.append(table(fleets, ["fleet", "pods", "gpu/pod", "cpu", "memory", "shm", "nodeSelector",
                                    "gpus"], indent="  "))
        lines.append(f"  total GPUs: {total}")
        job = next((o for o in objects if o.get("kind") == "Job"), None)  # launch.mode job's one Job
        if job is not None:  # the one pod: what the scheduler sees, summed from the rows above
            requests = job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]
            lines.append("  the Job's one pod requests " + ", ".join(f"{k} {v}" for k, v in requests.items()))
        lines += _fit_lines(found)
    lines.append(f"  {ray_ports_line(infra)}")
    lines.append(f"  {cpu_placement_line(infra)}")
    if sb["enabled"]:
        res, sec = sb["resources"], sb["security"]
        hardening = ["no privilege escalation", "drop ALL", "seccomp RuntimeDefault"] if sec["enabled"] else [
            "securityContext OFF"]
        hardening += [word for word, on in (("non-root", sec["runAsNonRoot"]),
                                            ("read-only root", sec["readOnlyRootFilesystem"]),
                                            ("no API token", not sec["automountServiceAccountToken"]),
                                            (f"runtime {sb['runtimeClassName']}", sb["runtimeClassName"]),
                                            ("user namespace", sb["hostUsers"] is False)) if on]
        lines.append("\nsandbox pool (GPU-free, untrusted code)")
        lines.append(table([
            ["replicas", f"{sb['replicas']} × (cpu {res['cpu']}, memory {res['memory']}, "
                         f"ephemeral-storage {res['ephemeralStorage']})"],
            ["image", sb["image"]],
            ["hardening", ", ".join(hardening)],
            *sandbox_rows(infra),
            ["pdb", f"maxUnavailable {sb['pdb']['maxUnavailable']}" if sb["pdb"]["enabled"] else "off"],
            ["urls", _urls(infra)],
        ], indent="  "))
    else:
        lines.append("\nsandbox pool: disabled")
    if launch["mode"] == "attach":
        lines.append(f"\nattached cluster: the Ray job gets the recipe at {attach_recipe_path(infra)} "
                     "(written from its runtime_env) and DOCKYARD_RECIPE"
                     + (", DOCKYARD_SANDBOX_URLS" if sb["enabled"] and sb["injectUrls"] else "")
                     + " in runtime_env.env_vars; nothing GPU-side is rendered")

    lines += [f"{WARN} sandbox-isolation ({e.severity}): {e.template.obj}: {e.message}" for e in found.exposures]
    lines += prerequisite_section(found.prerequisites, "must exist before `render | kubectl apply` (`run` creates "
                                                       "the Ray token Secret and stops on anything else missing)",
                                  found.token)
    lines.append("\nobjects (apply order)")
    lines.append(table([[i, object_ref(o)] for i, o in enumerate(applied, 1)], indent="  "))
    return "\n".join(lines)
