"""Run-level rules: what the schema of one key cannot say, checked once every layer is merged.

Each problem is reported at the key the user wrote (and names the other key and the layer
each came from when two disagree). KubeRay's own rules live in ``validate/kuberay.py``; the
fit of each pod on one node of its declared instance type is checked on the rendered pods
(``plan/fit.py``). Pure functions of a :class:`RunConfig`.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Any

from dockyard_k8s.config.kueue import kueue_config_problems
from dockyard_k8s.config.model import GPU_FLEETS, SHIPPED, RunConfig, layer_name
from dockyard_k8s.config.network import network_problems
from dockyard_k8s.config.overrides import lookup
from dockyard_k8s.config.platforms import (
    EKS_PRESETS,
    INSTANCE_TYPE_LABEL,
    platform_problems,
    unpinned_images,
)
from dockyard_k8s.credentials import command_secrets, env_for, redact_assignment, secrets_in_env, tokens_in
from dockyard_k8s.errors import ConfigProblem
from dockyard_k8s.kube import parse_quantity, split_image
from dockyard_k8s.plain import Path, format_path
from dockyard_k8s.plan import catalog
from dockyard_k8s.render.platform import gpu_instance_types
from dockyard_k8s.suggest import did_you_mean

if TYPE_CHECKING:
    from dockyard_k8s.config.model import Group

# Image references as the container runtime parses them (distribution/reference grammar):
# [host[:port]/]path[:tag][@digest]; path components lowercase.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_HOST = rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9a-fA-F:.]+\])"
IMAGE_REFERENCE = re.compile(
    rf"^(?:{_HOST}(?::[0-9]+)?/)?{_COMPONENT}(?:/{_COMPONENT})*(?::[\w][\w.-]{{0,127}})?"
    r"(?:@[a-z0-9]+(?:[+._-][a-z0-9]+)*:[0-9a-fA-F]{32,})?$")
MAX_IMAGE_NAME = 255

# Keys that name an image, in the order they are reported.
IMAGE_KEYS: tuple[Path, ...] = (("infra", "image"), ("sandbox", "image"), ("launch", "submitter", "image"),
                                ("ncclTest", "image"), ("infra", "imagePull", "pauseImage"))

# (request, limit) pairs of every sizing section: a limit below its request is rejected.
_SIZINGS: tuple[Path, ...] = (("kuberay", "head"), ("kuberay", "trainer"), ("kuberay", "inference"),
                              ("launch", "submitter"))
_PAIRS = (("cpu", "cpuLimit"), ("memory", "memoryLimit"))
_SANDBOX_PAIRS = (*_PAIRS, ("ephemeralStorage", "ephemeralStorageLimit"))


def image_problem(image: Any) -> str:
    """"" for a valid image reference, else what is wrong with it."""
    text = str(image)
    if "${" in text:
        return f"got {text!r}: an environment variable was not substituted"
    if text != text.strip() or not text:
        return f"got {text!r}, expected an image reference without spaces"
    repo, tag, _ = split_image(text)
    if IMAGE_REFERENCE.match(text) and len(repo) <= MAX_IMAGE_NAME:
        return ""
    if tag == "":
        return f"got {text!r}: empty tag after ':' (an unset variable with an empty default?)"
    if any(c.isupper() for c in repo.split("/", 1)[-1]):
        return f"got {text!r}: repository names must be lowercase"
    return (f"got {text!r}, expected an image reference like registry.example.com/team/image:1.2.3 "
            "or ...@sha256:<64 hex digits>")


def run_rules(run: RunConfig, *, missing_infra: str = "") -> tuple[list[ConfigProblem], list[str]]:
    """Every problem of the merged run, and notes on what was decided for the user;
    ``missing_infra`` is the loader's word on why no infra file set a required key.

    May adjust ``run.infra`` in place where a default gives way to what the user wrote (a
    profile's limit below the user's request follows the request)."""
    infra = run.infra
    problems: list[ConfigProblem] = []
    notes: list[str] = []
    if not infra["infra"]["image"]:
        message = "is required (got nothing, expected an image like registry.example.com/ubuntu-swe:vllm-1.4.2)"
        problem = run.locate(("infra", "image"), message + missing_infra)
        if problem.file == SHIPPED:  # nothing wrote it: say where it should go
            where = run.infra_files[-1] if run.infra_files else run.recipe_file
            problem = dataclasses.replace(problem, file=where)
        problems.append(problem)
    launch = infra["launch"]
    attach = launch["attach"]
    if launch["mode"] == "attach" and not (attach["cluster"] or attach["address"]):
        problems.append(run.locate(("launch", "attach"), "attach mode needs launch.attach.cluster or "
                                                         "launch.attach.address (got neither)"))
    if launch["mode"] == "attach" and attach["cluster"] and attach["address"]:  # which one? say so, not guess
        problems.append(run.locate(("launch", "attach", "address"),
                                   f"got both launch.attach.cluster ({attach['cluster']}) and launch.attach.address: "
                                   "expected one of them (a RayCluster of the namespace, port-forwarded, or the "
                                   "dashboard's URL)"))
    if launch["mode"] != "attach":  # a forgotten `mode: attach` would bring up a second GPU cluster
        problems += [run.locate(("launch", "attach", key),
                                f"launch.attach.{key} is read only in launch.mode attach (got launch.mode "
                                f"{launch['mode']}, which starts GPU pods of its own): set launch.mode: attach to "
                                f"submit to {attach[key]}, or remove launch.attach.{key}")
                     for key in ("cluster", "address") if attach[key]]
    problems += [run.locate(path, message) for path, message in [*platform_problems(infra),
                                                                   *kueue_config_problems(infra),
                                                                   *network_problems(infra)]]
    problems += _image_problems(run)
    problems += _limit_problems(run, notes)
    notes += _unpinned_notes(run)
    problems += _job_problems(run)
    problems += _fragment_problems(run)
    problems += secret_problems(run)
    problems += _cpu_placement_problems(run)
    return problems, notes


# How the GPU side reads a Secret (the documented way, docs/security.md).
SECRET_REF_FIX = ("an env entry {{name: {name}, valueFrom: {{secretKeyRef: {{name: SECRET, key: KEY}}}}}} in "
                  "kuberay.spec's container")


def secret_problems(run: RunConfig) -> list[ConfigProblem]:
    """Credentials by value in the run's infra (every env, the entrypoint): refused as serve refuses
    them, at the layer that wrote them, with the fix, never echoing the value."""
    out = []
    in_env = secrets_in_env(run.infra)
    said = {path for path, _, _ in in_env} | {("launch", "entrypoint")}  # ...and the entrypoint's, below
    elsewhere = [(path, env_for("", what), what) for path, what in tokens_in(run.infra) if path not in said]
    for path, name, what in [*in_env, *elsewhere]:
        if path[0] == "serve":
            continue  # serve check's own rule (config/serve.py), with serve's fix
        if path[0] == "sandbox":
            message = (f"{what} by value: the sandbox runs untrusted code, which can read its environment and "
                       "send it anywhere; expected no credential in sandbox.env (the executors need none)")
        else:
            message = (f"{what} by value would be stored in the rendered objects (the files you render, etcd, "
                       f"`kubectl get -o yaml`): expected a reference to a Secret, {SECRET_REF_FIX.format(name=name)} "
                       "(docs/security.md, as examples/grpo_swe.infra.yaml does)")
        out.append(_unechoed(run.locate(path, message)))
    for name, what in command_secrets(str(run.infra["launch"]["entrypoint"] or "")):
        var, named = env_for(name, what), f" ({name})" if name else ""
        out.append(_unechoed(run.locate(("launch", "entrypoint"), (
            f"{what} by value{named} would be in the job's command line (the RayJob's entrypoint in etcd, "
            f"`ray job list`, the dashboard): expected it from a Secret in the environment, "
            f'{SECRET_REF_FIX.format(name=var)}, and the command reading "${var}" (docs/security.md)'))))
    return out


def _unechoed(problem: ConfigProblem) -> ConfigProblem:
    """``problem`` located at a ``--set`` without the value it set (a file is named by its line)."""
    if problem.file.startswith("--set"):
        return dataclasses.replace(problem, file=redact_assignment(problem.file, always=True))
    return problem


def override_secret_message(name: str, what: str) -> str:
    """Why a recipe override holding a credential is refused, and the fix."""
    return (f"{what} by value would be on the job's command line (the RayJob's entrypoint, `ray job list`, the "
            f"mounted recipe ConfigMap): expected it from a Secret in the environment, "
            f"{SECRET_REF_FIX.format(name=env_for(name, what))}, read by the trainer (docs/security.md)")


def recipe_secret_message(path: Path, what: str, *, substituted: bool = False) -> str:
    """Why a credential written in the recipe (a file of its composition) is refused, and the fix;
    ``substituted``: it was written as ``${VAR}``, which is replaced where the recipe is read."""
    name = next((str(p) for p in reversed(path) if isinstance(p, str)), "")
    how = (" (its ${...} is replaced by the variable's value where dockyard-k8s reads the recipe, on this machine; "
           "$${oc.env:VAR} leaves the reading to the trainer's OmegaConf, in the pod)") if substituted else ""
    return (f"{what} by value would be stored in the recipe ConfigMap (the files you render, etcd, "
            f"`kubectl get -o yaml`, the mounted recipe every pod reads){how}: expected it from a Secret in the "
            f"environment, {SECRET_REF_FIX.format(name=env_for(name, what))}, read by the trainer; remove "
            f"{format_path(path)} from the recipe (docs/security.md)")


def _cpu_placement_problems(run: RunConfig) -> list[ConfigProblem]:
    """A pod that requests no GPU but selects what only GPU nodes have would never schedule once
    infra.cpuScheduling keeps it off them (render/platform.py)."""
    infra = run.infra
    cs, kr, mode = infra["infra"]["cpuScheduling"], infra["kuberay"], infra["launch"]["mode"]
    if not cs["avoidGpuNodes"]:
        return []
    sections: list[Path] = [("sandbox",)] if infra["sandbox"]["enabled"] else []
    if mode in ("rayjob", "bringup") and kr["head"]["gpus"] == 0:
        sections.append(("kuberay", "head"))
    if mode != "job":  # job: one pod, GPU or not, on the fleets' node; the sandbox is kept off them all the same
        sections += [("kuberay", role) for role in GPU_FLEETS if kr[role]["gpus"] == 0 and kr[role]["replicas"] > 0]
    gpu_types = gpu_instance_types(infra)
    out = []
    for section in sections:
        for key, value in lookup(infra, section)[1]["nodeSelector"].items():
            marked = cs["gpuNodeLabels"].get(key)
            known = node_gpus(run, {key: value}) if key == INSTANCE_TYPE_LABEL else None
            if key == INSTANCE_TYPE_LABEL and value in gpu_types:
                why = "the instance type a GPU fleet selects"
            elif known is not None and known[1] > 0:
                why = f"a {value} node has {known[1]} GPUs"
            elif marked in ("*", value):
                why = f"infra.cpuScheduling.gpuNodeLabels marks {key}: {marked} as a GPU node's"
            else:
                continue
            out.append(run.locate((*section, "nodeSelector", key),
                                  f"{key}: {value!r} selects GPU nodes ({why}), but the pods of {format_path(section)} "
                                  "request no GPU and infra.cpuScheduling.avoidGpuNodes keeps them off GPU nodes: they "
                                  "could only run on one it does not recognise; select a CPU node, or set "
                                  "infra.cpuScheduling.avoidGpuNodes: false"))
    return out


def _image_problems(run: RunConfig) -> list[ConfigProblem]:
    out = []
    for path in IMAGE_KEYS:
        image = lookup(run.infra, path)[1]
        if not image or (path != ("infra", "image") and image == run.infra["infra"]["image"]):
            continue  # a copy of infra.image (sandbox.image defaults to it) is reported at infra.image
        why = image_problem(image)
        if why:
            out.append(run.locate(path, why))
    return out


def _unpinned_notes(run: RunConfig) -> list[str]:
    """An image without a pinned tag runs, so it is a note (lint's image-tag says error), unless
    infra.imagePull.requirePinned makes it a problem (platform_problems)."""
    if run.infra["infra"]["imagePull"]["requirePinned"]:
        return []
    return [f"{format_path(path)} {why}; it runs, but a node may pull another build of it later "
            "(infra.imagePull.requirePinned: true refuses it)"
            for path, why in unpinned_images(run.infra)]


def _described(run: RunConfig, path: Path) -> str:
    """``kuberay.trainer.memory 30Gi (--set ...)``: a key, its value and its layer."""
    return f"{format_path(path)} {lookup(run.infra, path)[1]} ({layer_name(run.layer(path))})"


def _rank(run: RunConfig, path: Path) -> int:
    """How high the layer that set ``path`` is: shipped < profile < files in order < --set..."""
    layer = run.layer(path)
    if layer in run.sources:
        return run.sources.index(layer)
    return len(run.sources) if not layer.startswith("<") else 0


def _limit_problems(run: RunConfig, notes: list[str]) -> list[ConfigProblem]:
    """A limit below its request: the API server rejects the pod. When only the request was
    written by the user (the limit is a default or a profile's), the limit follows it."""
    out = []
    sections: list[tuple[Path, tuple[tuple[str, str], ...]]] = [(s, _PAIRS) for s in _SIZINGS]
    sections.append((("sandbox", "resources"), _SANDBOX_PAIRS))
    for section, pairs in sections:
        data = lookup(run.infra, section)[1]
        for request_key, limit_key in pairs:
            request, limit = data[request_key], data[limit_key]
            low, high = parse_quantity(limit), parse_quantity(request)
            if limit is None or low is None or high is None or low >= high:
                continue
            req_path, lim_path = (*section, request_key), (*section, limit_key)
            if run.written_by_user(req_path) and not run.written_by_user(lim_path):
                notes.append(f"{format_path(lim_path)} follows {format_path(req_path)}: {request} (the "
                             f"{limit} of {layer_name(run.layer(lim_path))} is below the request you set)")
                data[limit_key] = request
                continue
            # at the key the user wrote last (the higher layer): most likely the one just changed
            at = lim_path if _rank(run, lim_path) >= _rank(run, req_path) else req_path
            out.append(run.locate(at, f"{_described(run, lim_path)} is below {_described(run, req_path)}: the "
                                      "API server rejects a limit below its request; raise the limit or set "
                                      f"{format_path(lim_path)}: null (= the request)"))
    return out


def node_gpus(run: RunConfig, selector: dict[str, str]) -> tuple[str, int] | None:
    """(instance type, GPUs of one node) of a GPU fleet's declared instance type, if known."""
    itype = selector.get(INSTANCE_TYPE_LABEL) or run.infra["infra"]["instanceType"]
    if not itype:
        return None
    if itype in EKS_PRESETS:
        return itype, EKS_PRESETS[itype].gpus
    custom = run.infra["plan"]["instanceTypes"].get(itype)
    if custom is not None:
        amount = parse_quantity(custom["allocatable"].get("nvidia.com/gpu", 0))
        return itype, int(amount or 0)
    if itype in catalog.AWS:
        return itype, catalog.AWS[itype].gpus
    if itype in catalog.EXPLICIT:
        return itype, int(catalog.EXPLICIT[itype].get("nvidia.com/gpu", 0))
    return None


def _job_problems(run: RunConfig) -> list[ConfigProblem]:
    """launch.mode job is one pod on one node: at most one pod per fleet, the node's GPUs,
    one value per node label."""
    infra = run.infra
    if infra["launch"]["mode"] != "job":
        return []
    kr = infra["kuberay"]
    out = []
    fleets = [r for r in GPU_FLEETS if kr[r]["replicas"] > 0]
    for role in fleets:
        if kr[role]["replicas"] > 1:
            out.append(run.locate(("kuberay", role, "replicas"),
                                  f"got {kr[role]['replicas']}: launch.mode job runs one pod on one node, so a "
                                  "fleet has at most 1 pod (use launch.mode statefulset for several nodes)"))
    groups: list[Group] = ["head", *fleets]
    selectors = {g: kr[g]["nodeSelector"] for g in groups}
    params = {g: kr[g]["rayStartParams"] for g in groups}
    for field, of, why in (("nodeSelector", selectors, "which cannot be on both kinds of node"),
                           ("rayStartParams", params, "which starts one Ray node, with one value of each")):
        chosen: dict[str, tuple[Any, Group]] = {}
        for g in groups:
            for key, value in of[g].items():
                if key in chosen and chosen[key][0] != value:
                    first = chosen[key][1]
                    out.append(run.locate(("kuberay", g, field, key),
                                          f"got {value!r}, but kuberay.{first}.{field} has {key}: "
                                          f"{chosen[key][0]!r}: launch.mode job puts the head and every fleet in "
                                          f"one pod, {why}"))
                chosen.setdefault(key, (value, g))
        if field == "nodeSelector":
            selector = {k: v for k, (v, _) in chosen.items()}
    fleet_keys = {k for g in fleets if kr[g]["gpus"] > 0 for k in kr[g]["nodeSelector"]}
    for key, value in kr["head"]["nodeSelector"].items():
        if fleet_keys and key not in fleet_keys:  # a selector for a CPU head, left from a RayCluster config
            out.append(run.locate(("kuberay", "head", "nodeSelector", key),
                                  f"{key}: {value!r} selects a node for the head alone, but launch.mode job runs the "
                                  "head in the one GPU pod, on a node the GPU fleets select: drop it, or add it to "
                                  "the fleets' nodeSelector if their nodes carry it too"))
    node = node_gpus(run, selector)
    asked = [(g, kr[g]["gpus"]) for g in groups if kr[g]["gpus"] > 0]
    total = sum(n for _, n in asked)
    if node is not None and total > node[1] and asked:
        parts = " + ".join(f"kuberay.{g}.gpus {n}" for g, n in asked)
        last = asked[-1][0]
        out.append(run.locate(("kuberay", last, "gpus"),
                              f"launch.mode job runs on one {node[0]} node ({node[1]} GPUs), but the fleets ask "
                              f"{total} ({parts}): give each fleet its share (e.g. trainer {node[1] // 2} + "
                              f"inference {node[1] - node[1] // 2}), or set kuberay.inference.replicas: 0 "
                              "for a colocated run"))
    return out


def _fragment_problems(run: RunConfig) -> list[ConfigProblem]:
    """A worker group of kuberay.spec merges into the fleet of its groupName; one that names
    no fleet would silently add a third group (a typo like ``trainr``)."""
    groups = run.infra["kuberay"]["spec"].get("workerGroupSpecs")
    allowed = set(run.infra["kuberay"]["extraGroups"])
    out = []
    for i, group in enumerate(groups if isinstance(groups, list) else []):
        name = group.get("groupName") if isinstance(group, dict) else None
        path = ("kuberay", "spec", "workerGroupSpecs", i, "groupName")
        if not isinstance(name, str):
            out.append(run.locate(path[:-1], f"got {group!r}, expected a worker group with a groupName "
                                             "(trainer or inference, to merge into that fleet)"))
        elif name not in GPU_FLEETS and name not in allowed:
            hint = did_you_mean(name, GPU_FLEETS)
            out.append(run.locate(path, f"got {name!r}, expected trainer or inference (the fleet this fragment "
                                        f"merges into){hint} To add a worker group of your own, list it in "
                                        f"kuberay.extraGroups: [{name}]"))
    return out
