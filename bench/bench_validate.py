"""`dockyard-k8s validate` on N mixed objects in one multi-document file, vs kubernetes_validate.

Generates N realistic objects (GPU Deployments, RayJobs, Services, NetworkPolicies; a share
invalid: unknown field, wrong type, bad GPU quantity, selector mismatch), writes them to one
file, then in the same run measures (fresh processes, bytecode on, warm validator cache):

* ``dockyard-k8s validate FILE``  whole process: start-up, YAML parsing, schemas, rules, output;
  by default with one worker per core, with ``--workers 1``, and with the cyclic garbage
  collector left running (``bulk`` pauses it for large inputs)
* YAML parsing alone, per parser: PyYAML CSafeLoader, yaml-rs, rapidyaml (when installed)
* ``kubernetes_validate.validate(obj, "1.29", strict=True)`` on a sample (it cannot finish N
  in reasonable time; objects/s is extrapolated from the sample)

Usage: python bench/bench_validate.py [-n 10000] [--sample 300]
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def gpu_deployment(i: int) -> dict:
    name = f"vllm-{i}"
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "serving", "labels": {"app": name, "tier": "inference"}},
        "spec": {
            "replicas": 2, "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, "tier": "inference"}},
                "spec": {
                    "priorityClassName": "gpu-serving",
                    "nodeSelector": {"node.kubernetes.io/instance-type": "p4de.24xlarge"},
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [{
                        "name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "imagePullPolicy": "IfNotPresent",
                        "args": ["--model", "/models/qwen", "--tensor-parallel-size", "8"],
                        "ports": [{"name": "http", "containerPort": 8000}],
                        "env": [{"name": "HF_HOME", "value": "/models"}, {"name": "VLLM_PORT", "value": "8000"}],
                        "resources": {"requests": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": 8},
                                      "limits": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": 8}},
                        "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10},
                        "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"},
                                         {"name": "models", "mountPath": "/models"}],
                    }],
                    "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}},
                                {"name": "models", "persistentVolumeClaim": {"claimName": "models"}}],
                },
            },
        },
    }


def service(i: int) -> dict:
    name = f"vllm-{i}"
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "serving"},
            "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}


def network_policy(i: int) -> dict:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": f"vllm-{i}", "namespace": "serving"},
            "spec": {"podSelector": {"matchLabels": {"app": f"vllm-{i}"}}, "policyTypes": ["Ingress", "Egress"],
                     "ingress": [{"from": [{"podSelector": {}}], "ports": [{"port": 8000, "protocol": "TCP"}]}],
                     "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["169.254.0.0/16"]}}]}]}}


def rayjob(i: int) -> dict:
    def group(name: str, gpus: int) -> dict:
        return {"template": {"spec": {"containers": [{
            "name": name, "image": "rayproject/ray:2.49.0-gpu",
            "resources": {"limits": {"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": gpus}},
            "env": [{"name": "RAY_ENABLE_UV_RUN_RUNTIME_ENV", "value": "0"}]}]}}}

    worker = {"groupName": "trainer", "replicas": 2, "minReplicas": 2, "maxReplicas": 2,
              "rayStartParams": {"resources": '"{\\"dockyard_fleet_trainer\\": 1}"'}, **group("ray-worker", 8)}
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": f"grpo-{i}", "namespace": "rl"},
            "spec": {"entrypoint": "python -m train", "shutdownAfterJobFinishes": True,
                     "ttlSecondsAfterFinished": 600, "submissionMode": "K8sJobMode",
                     "rayClusterSpec": {"rayVersion": "2.49.0",
                                        "headGroupSpec": {"rayStartParams": {}, **group("ray-head", 0)},
                                        "workerGroupSpecs": [worker]}}}


def break_it(obj: dict, i: int) -> dict:
    obj = copy.deepcopy(obj)
    spec = obj["spec"]
    if i % 4 == 0:
        spec["bogus"] = True  # unknown field
    elif i % 4 == 1:
        spec["replicas" if obj["kind"] == "Deployment" else "bogusCount"] = "two"  # wrong type
    elif i % 4 == 2 and obj["kind"] == "Deployment":
        spec["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "abc"
    elif obj["kind"] == "Deployment":
        spec["template"]["metadata"]["labels"]["app"] = "other"  # selector mismatch
    else:
        obj["metadata"]["name"] = "Bad_Name"
    return obj


MIX = ((gpu_deployment, 3), (service, 3), (network_policy, 2), (rayjob, 2))  # weights, per 10 objects


def generate(n: int, invalid_every: int = 20) -> list[dict]:
    """``n`` objects in the MIX proportions; one in ``invalid_every`` broken. The broken one's
    position moves from block to block, so every kind gets broken, in each of the four ways."""
    makers = [m for m, w in MIX for _ in range(w)]
    out = []
    for i in range(n):
        obj = makers[i % len(makers)](i // len(makers))
        block = i // invalid_every
        out.append(break_it(obj, block) if i % invalid_every == block % len(makers) else obj)
    return out


def _env(cache: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["XDG_CACHE_HOME"] = cache
    return env


def _timed(cmd: list[str], env: dict[str, str], runs: int) -> tuple[float, subprocess.CompletedProcess[str]]:
    times, last = [], None
    for _ in range(runs):
        t = time.perf_counter()
        last = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT, check=False)
        times.append(time.perf_counter() - t)
    assert last is not None
    return statistics.median(times), last


PARSE = """
import gc, sys, time
gc.disable()  # as dockyard-k8s validate runs; with the collector on, every parser is ~1.5-2x slower
text = open(sys.argv[2]).read()
t = time.perf_counter()
if sys.argv[1] == "pyyaml":
    import yaml
    docs = list(yaml.load_all(text, Loader=yaml.CSafeLoader))
elif sys.argv[1] == "dockyard (yaml-rs + pre-scan)":
    from dockyard_k8s.validate.reader import region_documents_of
    docs = region_documents_of(sys.argv[2], text, 0, len(text))[0]
elif sys.argv[1] == "yaml-rs":
    import yaml_rs
    docs = yaml_rs.loads(text, parse_datetime=False)
else:
    import ryml
    tree = ryml.parse_in_arena(text.encode())
    docs = [tree.num_children(tree.root_id())]
print(time.perf_counter() - t)
"""

GC_ON = """
import contextlib, sys
from dockyard_k8s.validate import bulk
bulk._collector_paused = contextlib.nullcontext
from dockyard_k8s.cli import run
sys.argv = ["dockyard-k8s", "validate", *sys.argv[1:]]
run()
"""

KV = """
import sys, time, yaml
docs = list(yaml.load_all(open(sys.argv[1]).read(), Loader=yaml.CSafeLoader))[: int(sys.argv[2])]
import kubernetes_validate
t = time.perf_counter()
for d in docs:
    try:
        kubernetes_validate.validate(d, "1.29", strict=True)
    except Exception:
        pass
print(len(docs) / (time.perf_counter() - t))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=10_000)
    parser.add_argument("--sample", type=int, default=300, help="objects given to kubernetes_validate")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(ROOT, "src"))
    from dockyard_k8s.yamlfile import dump_documents

    exe = os.path.join(os.path.dirname(sys.executable), "dockyard-k8s")
    with tempfile.TemporaryDirectory() as tmp:
        objects = generate(args.n)
        path = os.path.join(tmp, "mixed.yaml")
        with open(path, "w") as f:
            f.write(dump_documents(objects))
        size = os.path.getsize(path)
        with open(path) as f:
            lines = sum(1 for _ in f)
        env = _env(os.path.join(tmp, "cache"))
        print(f"input: {args.n} objects, {size / 1e6:.1f} MB, {lines} lines, one file")
        t, _ = _timed([exe, "validate", path], env, 1)
        print(f"first run, empty cache (compiles validators): {t:.2f} s")
        variants = [
            ("dockyard-k8s validate (default: one worker per core)", [exe, "validate", "--summary", path]),
            ("dockyard-k8s validate --workers 1 (one process)", [exe, "validate", "--workers", "1", path]),
            ("same, collector not paused", [sys.executable, "-c", GC_ON, path]),
        ]
        times: dict[str, list[float]] = {name: [] for name, _ in variants}
        result = None
        for _ in range(args.runs):  # interleaved, so machine noise hits every variant alike
            for name, cmd in variants:
                t = time.perf_counter()
                out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT, check=False)
                times[name].append(time.perf_counter() - t)
                result = result or out
        assert result is not None
        for name, _ in variants:
            t = statistics.median(times[name])
            q = statistics.quantiles(times[name], n=4) if len(times[name]) > 1 else [t, t, t]
            print(f"{name}: median {t:.2f} s (IQR {q[0]:.2f}-{q[2]:.2f} s, min {min(times[name]):.2f} s) "
                  f"= {args.n / t:,.0f} objects/s")
        print(f"  exit {result.returncode}; {result.stdout.strip().splitlines()[-1]}")
        env_py = dict(env, DOCKYARD_K8S_YAML="pyyaml")
        t, _ = _timed([exe, "validate", path], env_py, 1)
        print(f"dockyard-k8s validate with the PyYAML reader only: {t:.2f} s = {args.n / t:,.0f} objects/s")
        for name in ("pyyaml", "yaml-rs", "rapidyaml (tree only)", "dockyard (yaml-rs + pre-scan)"):
            out = subprocess.run([sys.executable, "-c", PARSE, name, path], env=env, capture_output=True,
                                 text=True, check=False)
            if out.returncode:
                print(f"parse {name}: not installed")
                continue
            secs = float(out.stdout.strip())
            print(f"parse {name:32} {secs:.2f} s = {args.n / secs:,.0f} objects/s (one process, no cyclic GC)")
        out = subprocess.run([sys.executable, "-c", KV, path, str(args.sample)], env=env, capture_output=True,
                             text=True, check=False)
        if out.returncode == 0:
            rate = float(out.stdout.strip())
            print(f"kubernetes_validate.validate strict ({args.sample} objects, in-process, parsing excluded): "
                  f"{rate:,.0f} objects/s -> {args.n / rate:,.0f} s for {args.n}")
        else:
            print("kubernetes_validate: not installed")


if __name__ == "__main__":
    main()
