"""A serve spec -> one resolved endpoint configuration, or every problem at once.

A serve spec is an infra file with a ``serve:`` section (``config/serve_schema.py`` says
why), so it is layered exactly like a run's infra file::

    shipped defaults < platform profile < user defaults file < SPEC (and its defaults: parents) < --set

Then the derived defaults are filled in (name from the file, the backend's image and port,
the served model name, the model claim from ``infra.storage``...) and the rules that span
several keys are checked, each reported at the key the user wrote (file:line:col).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dockyard_k8s.config.loader import Layers, load_infra_doc, run_name_from
from dockyard_k8s.config.model import problem_at
from dockyard_k8s.config.platforms import image_pin_problem
from dockyard_k8s.config.serve_schema import backend_of
from dockyard_k8s.config.yamlio import Mark, Path, format_path
from dockyard_k8s.credentials import secret_by_value
from dockyard_k8s.errors import ConfigError, ConfigProblem
from dockyard_k8s.kube import format_quantity, parse_quantity

if TYPE_CHECKING:
    from dockyard_k8s.config.infra_types import InfraSpec, Serve

SINGLE_GPU_PLATFORMS = ("kind", "k3s")  # one node, one GPU ([LOCAL] in config/platforms.py)
MAX_NAME = 63  # the Service name and every label value
MODEL_MOUNT = "/models"
# Environment the renderer sets itself: name -> the key that controls it.
MANAGED_ENV = {"HF_HOME": "serve.cache.mountPath", "HF_TOKEN": "serve.model.hubTokenSecret",
               "HF_HUB_OFFLINE": "serve.model.path", "DOCKYARD_API_KEY": "serve.apiKeySecret",
               "DOCKYARD_ADMIN_API_KEY": "serve.apiKeySecret.adminKey"}
# Hub tokens people paste into env: the fix for them is serve.model.hubTokenSecret.
_TOKEN_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HUGGINGFACE_HUB_TOKEN")


@dataclass(frozen=True, slots=True)
class ServeConfig:
    """An endpoint, fully resolved: what ``render/serve.py`` and the serve commands work from."""

    infra: InfraSpec  # the whole infra spec (namespace, platform...), serve's derived defaults filled
    spec_file: str
    sources: list[str]
    marks: dict[Path, Mark]
    key_marks: dict[Path, Mark]

    @property
    def serve(self) -> Serve:
        return self.infra["serve"]

    @property
    def name(self) -> str:
        return str(self.serve["name"])

    @property
    def namespace(self) -> str:
        return str(self.infra["infra"]["namespace"])


def endpoint_name_from(spec_file: str) -> str:
    """``llama-8b.serve.yaml`` (or ``.infra.yaml``) -> ``llama-8b`` (a DNS-1035 label, as run names are made)."""
    return run_name_from(re.sub(r"\.(serve|infra)(?=\.ya?ml$)", "", spec_file))


def load_serve(spec_file: str, layers: Layers = Layers()) -> ServeConfig:
    """Resolve a serve spec with its ``layers`` (``--set``, ``-n`` as a value).

    Raises:
        ConfigError: every problem found, each located by file, line, column and key.
    """
    try:
        doc, sources = load_infra_doc(spec_file, layers)
    except ConfigError as e:
        raise _recipe_given(spec_file, e) from None
    fill_derived(doc.data, spec_file)
    problems = []
    written = {path[:end] for path in doc.marks for end in range(1, len(path) + 1)}  # a key or one under it
    for path, message in serve_problems(doc.data, written=written.__contains__):
        if path == ("serve", "name") and path not in doc.marks:
            problems.append(ConfigProblem(spec_file, 0, 0, format_path(path),
                                          message + " (the name defaults to the spec file name; set serve.name)"))
        else:
            problems.append(problem_at(doc.marks, doc.key_marks, path, message))
    if problems:
        raise ConfigError(problems)
    return ServeConfig(doc.data, spec_file, sources, doc.marks, doc.key_marks)


def _recipe_given(spec_file: str, error: ConfigError) -> ConfigError:
    """A training recipe given as the serve spec: one problem that says so, not one "unknown
    key" per top-level key of the recipe (and of its defaults)."""
    unknown = [p for p in error.problems if p.message.startswith("unknown key") and "." not in p.path]
    if not unknown or len(unknown) != len(error.problems):
        return error
    try:
        with open(spec_file, encoding="utf-8") as f:
            if re.search(r"^serve\s*:", f.read(), re.MULTILINE):  # a serve spec with stray keys: as found
                return error
    except (OSError, UnicodeDecodeError):
        return error
    keys = ", ".join(dict.fromkeys(p.path for p in unknown if p.file == spec_file)) or unknown[0].path
    return ConfigError([ConfigProblem(spec_file, 0, 0, "", f"not a serve spec: its top-level keys ({keys}) are none "
                                      "of a serve spec's (serve, infra, defaults...): is it a training recipe? `serve` "
                                      "takes a file with a serve: section (docs/serve.md); a recipe goes to check or "
                                      "run")])


# --- derived defaults ---------------------------------------------------------------------------


def _storage_claim(infra: InfraSpec) -> str | None:
    """The run's shared claim (infra.storage), when one is named."""
    st = infra["infra"]["storage"]
    return str(st["claimName"]) if st["enabled"] and st["claimName"] else None


def fill_derived(infra: InfraSpec, spec_file: str) -> None:
    """Defaults that depend on other values (each documented on its field), in place."""
    s = infra["serve"]
    backend = backend_of(s)
    model = s["model"]
    if s["name"] is None:
        s["name"] = endpoint_name_from(spec_file)
    if s["image"] is None:
        s["image"] = backend.image
    if s["imagePullPolicy"] is None:
        s["imagePullPolicy"] = infra["infra"]["imagePullPolicy"]
    if s["port"] is None:
        s["port"] = backend.port
    if model["servedName"] is None:
        model["servedName"] = model["id"] or s["name"]
    if model["path"] is not None:
        if model["claimName"] is None:
            model["claimName"] = _storage_claim(infra)
        if model["mountPath"] is None:
            same = model["claimName"] is not None and model["claimName"] == _storage_claim(infra)
            model["mountPath"] = infra["infra"]["storage"]["mountPath"] if same else MODEL_MOUNT
    cache = s["cache"]
    if cache["enabled"] is None:
        cache["enabled"] = model["path"] is None
    if cache["claimName"] is None:
        cache["claimName"] = f"{s['name']}-cache"
    if s["engine"]["tensorParallelSize"] is None:
        s["engine"]["tensorParallelSize"] = max(int(s["gpus"]), 1)
    if s["shmSize"] is None:
        per_gpu = parse_quantity(infra["lint"]["shmPerGpu"]) or 8 * 2**30
        s["shmSize"] = format_quantity(per_gpu * s["gpus"], binary=True) if s["gpus"] else "1Gi"
    auto = s["autoscaling"]
    if auto["metric"] is None:
        auto["metric"] = backend.metric
    if auto["query"] is None:
        ns = infra["infra"]["namespace"]
        auto["query"] = f'sum({auto["metric"]}{{namespace="{ns}",model_name="{model["servedName"]}"}})'


# --- rules --------------------------------------------------------------------------------------


# prometheus-operator's Prometheus, by the Service host KEDA is given: the governing Service the
# operator makes for every Prometheus, and kube-prometheus-stack's (<release>-kube-prom-prometheus,
# or kube-prometheus-stack-prometheus when the release is named after the chart).
_OPERATOR_PROMETHEUS = re.compile(r"^https?://(prometheus-operated|[a-z0-9-]*kube-prom(etheus-stack)?-prometheus)"
                                  r"(\.|:|/|$)")


def scrape_mechanism(s: Serve) -> str:
    """``podMonitor`` or ``annotations``: ``serve.metrics.scrape``, or for ``auto`` a PodMonitor
    when KEDA queries prometheus-operator's Prometheus (which ignores prometheus.io/* annotations)."""
    chosen = str(s["metrics"]["scrape"])
    if chosen != "auto":
        return chosen
    auto = s["autoscaling"]
    operator = bool(_OPERATOR_PROMETHEUS.match(str(auto["prometheusAddress"])))
    return "podMonitor" if auto["enabled"] and operator else "annotations"


def max_replicas(s: Serve) -> int:
    """Most server pods at once: KEDA's maximum, else the fixed count."""
    return int(s["autoscaling"]["maxReplicas"] if s["autoscaling"]["enabled"] else s["replicas"])


def shared_cache(s: Serve) -> bool:
    """One claim mounted by every server pod (not per replica)."""
    return bool(s["cache"]["enabled"] and not s["cache"]["perReplica"])


def model_claim_mode(infra: InfraSpec) -> str | None:
    """Access mode of the model claim when we know it (the run's infra.storage claim)."""
    m = infra["serve"]["model"]
    if m["path"] is not None and m["claimName"] and m["claimName"] == _storage_claim(infra):
        return str(infra["infra"]["storage"]["accessMode"])
    return None


def _replica_key(s: Serve) -> Path:
    return ("serve", "autoscaling", "maxReplicas") if s["autoscaling"]["enabled"] else ("serve", "replicas")


def _model_problems(infra: InfraSpec) -> list[tuple[Path, str]]:
    s = infra["serve"]
    m = s["model"]
    out: list[tuple[Path, str]] = []
    if m["id"] is None and m["path"] is None:
        return [(("serve", "model"), "is required (got neither serve.model.id nor serve.model.path, expected a "
                                     "hub id like meta-llama/Meta-Llama-3-8B-Instruct or a checkpoint directory)")]
    if m["id"] is not None and m["path"] is not None:
        return [(("serve", "model", "path"), f"got both id {m['id']!r} and path {m['path']!r}, expected one: "
                                             "a hub id or a directory on a claim")]
    if m["path"] is None:
        return out
    path = str(m["path"])
    if not m["claimName"]:
        out.append((("serve", "model", "claimName"), f"is required for a path (got nothing, expected the existing "
                                                     f"PersistentVolumeClaim that holds {path}; a run's shared "
                                                     "storage is used when infra.storage names its claim)"))
    if not path.startswith("/"):
        out.append((("serve", "model", "path"), f"got {path!r}, expected an absolute directory inside the claim "
                                                f"(mounted at {m['mountPath']}), e.g. {m['mountPath']}/{path}"))
        return out
    if posixpath.normpath(path) != path.rstrip("/") or "//" in path:
        out.append((("serve", "model", "path"), f"got {path!r}, expected a normalized path (no '..', '.' or '//'): "
                                                f"{posixpath.normpath(path)}"))
        return out
    if not m["claimName"]:
        return out
    mount = str(m["mountPath"]).rstrip("/") or "/"
    if not str(m["mountPath"]).startswith("/"):
        out.append((("serve", "model", "mountPath"), f"got {m['mountPath']!r}, expected an absolute path"))
    elif path != mount and not path.startswith(mount.rstrip("/") + "/"):
        out.append((("serve", "model", "path"), f"got {path!r}, outside {mount} where claim {m['claimName']!r} is "
                                                f"mounted (serve.model.mountPath); expected a directory under "
                                                f"{mount}, or set serve.model.mountPath"))
    if s["cache"]["enabled"] and mount == str(s["cache"]["mountPath"]).rstrip("/"):
        out.append((("serve", "model", "mountPath"), f"got {mount!r}, the cache's mount path too "
                                                     "(serve.cache.mountPath): expected another directory"))
    mode = model_claim_mode(infra)
    replicas = max_replicas(s)
    if mode in ("ReadWriteOnce", "ReadWriteOncePod") and replicas > 1:
        out.append((_replica_key(s), f"{replicas} replicas mount the model claim {m['claimName']!r}, which is "
                                     f"{mode} (infra.storage.accessMode): pods on different nodes cannot attach it; "
                                     "use ReadWriteMany or ReadOnlyMany storage, or 1 replica"))
    return out


def _cache_problems(infra: InfraSpec) -> list[tuple[Path, str]]:
    s = infra["serve"]
    c = s["cache"]
    if not c["enabled"]:
        return []
    out: list[tuple[Path, str]] = []
    if not str(c["mountPath"]).startswith("/"):
        out.append((("serve", "cache", "mountPath"), f"got {c['mountPath']!r}, expected an absolute path"))
    if c["subPath"] is not None and (str(c["subPath"]).startswith("/") or ".." in str(c["subPath"]).split("/")):
        out.append((("serve", "cache", "subPath"), f"got {c['subPath']!r}, expected a relative directory without "
                                                   "'..'"))
    if c["perReplica"] and not c["create"]:
        out.append((("serve", "cache", "perReplica"), "needs serve.cache.create: true (each pod gets a new claim; "
                                                      "an existing claim cannot be one per pod)"))
    replicas = max_replicas(s)
    if shared_cache(s) and replicas > 1 and c["accessMode"] in ("ReadWriteOnce", "ReadWriteOncePod"):
        why = ("attaches to one node: pods on other nodes stay ContainerCreating (Multi-Attach error)"
               if c["accessMode"] == "ReadWriteOnce" else "admits a single pod")
        out.append((_replica_key(s), f"got {replicas} replicas sharing the cache claim {c['claimName']!r}, which "
                                     f"is {c['accessMode']} (serve.cache.accessMode) and {why}; expected 1 replica, "
                                     "ReadWriteMany storage (serve.cache.accessMode + a storageClass such as EFS, "
                                     "FSx, NFS or Longhorn), or serve.cache.perReplica: true"))
    return out


def _rollout_problems(infra: InfraSpec) -> list[tuple[Path, str]]:
    s = infra["serve"]
    r = s["rollout"]
    out: list[tuple[Path, str]] = []
    strategy = rollout_strategy(s)
    if r["maxSurge"] > 0:
        if strategy == "Recreate":
            out.append((("serve", "rollout", "maxSurge"), f"got {r['maxSurge']}, but the rollout is Recreate "
                                                          "(serve.rollout.strategy, or auto with one replica): "
                                                          "set strategy: RollingUpdate to surge"))
        elif infra["infra"]["platform"] in SINGLE_GPU_PLATFORMS and s["gpus"] > 0:
            out.append((("serve", "rollout", "maxSurge"), f"got {r['maxSurge']} on {infra['infra']['platform']} "
                                                          "(one GPU node): the new pod would wait for the old pod's "
                                                          "GPU forever; expected 0"))
        elif (shared_cache(s) and s["cache"]["accessMode"] in ("ReadWriteOnce", "ReadWriteOncePod")) or \
                model_claim_mode(infra) in ("ReadWriteOnce", "ReadWriteOncePod"):
            out.append((("serve", "rollout", "maxSurge"), f"got {r['maxSurge']}: a surge pod shares a "
                                                          "ReadWriteOnce(Pod) claim with the pod it replaces and "
                                                          "cannot attach it on another node; expected 0"))
    if strategy == "RollingUpdate" and r["maxSurge"] == 0 and r["maxUnavailable"] == 0:
        out.append((("serve", "rollout", "maxUnavailable"), "got 0 with maxSurge 0: a rollout could never replace "
                                                            "a pod (the API server rejects it); expected 1"))
    return out


def rollout_strategy(s: Serve) -> str:
    """Recreate or RollingUpdate (``auto``: Recreate when one pod is all there is)."""
    chosen = str(s["rollout"]["strategy"])
    if chosen != "auto":
        return chosen
    return "Recreate" if max_replicas(s) == 1 else "RollingUpdate"


def _env_problems(s: Serve) -> list[tuple[Path, str]]:
    out: list[tuple[Path, str]] = []
    keyed = bool(s["apiKeySecret"]["name"])
    managed = {"HF_HOME": s["cache"]["enabled"], "HF_TOKEN": bool(s["model"]["hubTokenSecret"]["name"]),
               "HF_HUB_OFFLINE": s["model"]["path"] is not None, "DOCKYARD_API_KEY": keyed,
               "DOCKYARD_ADMIN_API_KEY": keyed and "adminApiKey" in backend_of(s).flags}
    for section in ("env", "secretEnv"):
        for name, value in s[section].items():
            what = secret_by_value(name, value) if section == "env" else None  # the one detector
            if managed.get(name):  # the launcher's own variable: the fix is to leave it out
                out.append((("serve", section, name), f"is set by dockyard-k8s from {MANAGED_ENV[name]}; "
                                                      "expected it left out"))
            elif what:
                hub = name.upper() in _TOKEN_ENV
                fix = ("serve.model.hubTokenSecret: {name: SECRET, key: token}" if hub else
                       f"serve.secretEnv: {{{name}: {{secret: SECRET, key: KEY}}}}")
                out.append((("serve", "env", name), f"{'a hub token' if hub else what} by value would be stored in "
                                                    "the Deployment (git, etcd, `kubectl get -o yaml`): expected a "
                                                    f"reference, {fix}"))
            elif section == "secretEnv" and name in s["env"]:
                out.append((("serve", "secretEnv", name), "is also in serve.env: the pod would define it twice; "
                                                          "expected one of them"))
    return out


def _engine_problems(s: Serve) -> list[tuple[Path, str]]:
    out: list[tuple[Path, str]] = []
    tp, gpus = s["engine"]["tensorParallelSize"], s["gpus"]
    if tp != max(gpus, 1):
        out.append((("serve", "engine", "tensorParallelSize"), f"got {tp} with serve.gpus {gpus}: one model instance "
                                                               f"spans every GPU of its pod; expected {max(gpus, 1)} "
                                                               "(or change serve.gpus)"))
    flags = backend_of(s).flags
    keys = {"model": "serve.model", "servedName": "serve.model.servedName", "host": "(always 0.0.0.0)",
            "port": "serve.port", "tensorParallelSize": "serve.engine.tensorParallelSize",
            "maxModelLen": "serve.engine.maxModelLen", "dtype": "serve.engine.dtype",
            "gpuMemoryUtilization": "serve.engine.gpuMemoryUtilization", "revision": "serve.model.revision",
            "apiKey": "serve.apiKeySecret", "adminApiKey": "serve.apiKeySecret.adminKey"}
    for i, arg in enumerate(s["engine"]["extraArgs"]):
        for option, flag in flags.items():
            if arg == flag or arg.startswith(flag + "="):
                out.append((("serve", "engine", "extraArgs", i), f"got {arg!r}: {flag} is set from "
                                                                 f"{keys[option]}; expected it there"))
    return out


def serve_problems(infra: InfraSpec, *,
                   written: Callable[[Path], bool] = lambda path: True) -> list[tuple[Path, str]]:
    """Every rule of the serve section that spans several keys, as (key path, message).

    ``written(path)`` says whether a layer set the key (or a key under it); a rule between two
    keys is reported at the one the user wrote.
    """
    s = infra["serve"]
    out: list[tuple[Path, str]] = []
    if len(str(s["name"])) > MAX_NAME:
        out.append((("serve", "name"), f"{s['name']!r} has {len(str(s['name']))} characters; at most {MAX_NAME} "
                                       "(it names the Service and is a label value)"))
    for request, limit, low, high in (("memory", "memoryLimit", s["memory"], s["memoryLimit"]),
                                      ("cpu", "cpuLimit", s["cpu"], s["cpuLimit"])):
        if high is not None and (parse_quantity(high) or 0) < (parse_quantity(low) or 0):
            at = ("serve", limit) if written(("serve", limit)) else ("serve", request)
            out.append((at, f"serve.{limit} {high} is below the request serve.{request} {low} (the API server "
                            "rejects a limit under its request); expected a limit at least the request"))
    if not written(("serve",)):
        return [(("serve",), "is required: this file has no serve: section (a serve spec is an infra file whose "
                             "serve.model names a hub id or a checkpoint directory; docs/serve.md)")]
    out += _model_problems(infra)
    out += _cache_problems(infra)
    out += _rollout_problems(infra)
    out += _env_problems(s)
    out += _engine_problems(s)
    auto = s["autoscaling"]
    if auto["enabled"]:
        if auto["maxReplicas"] < auto["minReplicas"]:
            out.append((("serve", "autoscaling", "maxReplicas"), f"got {auto['maxReplicas']}, expected at least "
                                                                 f"minReplicas ({auto['minReplicas']})"))
        if s["replicas"] > 1:
            out.append((("serve", "replicas"), f"got {s['replicas']} with autoscaling on: KEDA sets the count; "
                                               "expected autoscaling.minReplicas/maxReplicas instead"))
        net = s["network"]
        if net["defaultDeny"] and not (net["ingress"] or net["runs"] or net["extraIngress"]):
            out.append((("serve", "autoscaling", "enabled"), "KEDA scales on a metric Prometheus scrapes from the "
                                                             "server pods, but default-deny admits no one: add "
                                                             "Prometheus' namespace to serve.network.ingress "
                                                             "(e.g. {namespace: monitoring})"))
    if not s["apiKeySecret"]["name"]:
        for i, run in enumerate(s["network"]["runs"]):
            if run["sandbox"]:
                out.append((("serve", "network", "runs", i, "sandbox"),
                            f"admits the run's sandbox pool (untrusted code) to an endpoint without an API key: the "
                            f"agents' code of run {run['name']!r} could use all of it"
                            + (", SGLang's admin endpoints too (weight updates, cache flush)"
                               if s["backend"] == "sglang" else "")
                            + "; expected serve.apiKeySecret: {name: SECRET} (key api-key), given to the callers"))
    pc = s["priorityClass"]
    if pc["create"] and not pc["name"]:
        out.append((("serve", "priorityClass", "name"), "is required to create it (got nothing)"))
    if infra["infra"]["imagePull"]["requirePinned"]:
        why = image_pin_problem(str(s["image"]))
        if why:
            out.append((("serve", "image"), why + " (infra.imagePull.requirePinned)"))
    return out
