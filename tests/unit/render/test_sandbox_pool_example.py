"""infra/examples/sandbox-pool.yaml — the hand-written sandbox pool for teams that apply
manifests without the launcher (seed 000) — stays what the generator renders: the same
securityContext, NetworkPolicy, PDB, requests, probes... (objects compared field by field).

After an intended change of the sandbox renderer: DOCKYARD_UPDATE_GOLDEN=1 pytest this file,
then read `git diff infra/examples/sandbox-pool.yaml`.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.yamlfile import dump as dump_yaml
from support.paths import REPO

EXAMPLE = REPO / "infra" / "examples" / "sandbox-pool.yaml"
# What the example is the rendering of: a run named sandbox-pool in namespace dockyard.
INFRA = """\
infra:
  namespace: dockyard
  image: registry.example.com/ubuntu-swe:vllm-1.4.2
launch:
  name: sandbox-pool
"""
HEADER = """\
# The sandbox executor pool, hand-written for teams that apply manifests without dockyard-k8s
# (kubectl apply -f infra/examples/sandbox-pool.yaml). The same hardening baseline as the
# generator, object for object: tests/unit/render/test_sandbox_pool_example.py keeps this file
# equal to what `dockyard-k8s render` makes for a run named sandbox-pool in namespace dockyard.
#
# The pool runs untrusted, agent-generated code: no privilege escalation, every capability
# dropped, seccomp RuntimeDefault, no Kubernetes API token, its own empty ServiceAccount, no GPU
# (NVIDIA_VISIBLE_DEVICES=void, no service links), small requests (what the scheduler reserves per
# replica) with limits equal to them, an ephemeral-storage request against disk-pressure eviction,
# TCP probes, a PDB with maxUnavailable 1, and a NetworkPolicy: ingress to port 9090 only from the
# run's Ray pods (label yours dockyard-k8s/run: sandbox-pool and dockyard-k8s/fleet:
# head|trainer|inference), egress to cluster DNS and to public addresses only (private ranges and
# cloud metadata excepted). It needs a CNI that enforces NetworkPolicy. A required node affinity
# keeps it off GPU nodes (labelled nvidia.com/gpu.present=true by the NVIDIA GPU operator; GKE's
# carry cloud.google.com/gke-accelerator): add the label or instance type your GPU nodes have.
#
# Change for your cluster: the namespace, the image (pin a tag or a digest), replicas and
# resources. Point your trainer at http://sandbox-pool-sandbox.dockyard.svc.cluster.local:9090.
"""
COMMENTS = {
    "NetworkPolicy": "# Applied first: an executor pod never runs a moment without its policy.",
    "ServiceAccount": "# The executors' own, empty account: never the namespace's default one, to which EKS Pod\n"
                      "# Identity, IRSA or workload identity may give cloud credentials (never give this one any).",
    "Deployment": "# The executors: POST /task/submit on port 9090.",
    "Service": "# Stable DNS for the pool (what DOCKYARD_SANDBOX_URLS points at).",
    "PodDisruptionBudget": "# Drains take the pool down one replica at a time.",
}


def _generated(tmp_path: Path) -> list[dict]:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("model: m\n")
    infra = tmp_path / "i.yaml"
    infra.write_text(INFRA)
    objects = build_bundle(str(recipe), str(infra), Layers(env={"HOME": str(tmp_path)})).objects
    return [o for o in objects if o["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "sandbox"]


def test_the_hand_written_sandbox_pool_is_what_the_generator_renders(tmp_path):
    expected = _generated(tmp_path)
    assert [o["kind"] for o in expected] == ["NetworkPolicy", "ServiceAccount", "Deployment", "Service",
                                             "PodDisruptionBudget"]
    if os.environ.get("DOCKYARD_UPDATE_GOLDEN") == "1":
        EXAMPLE.parent.mkdir(parents=True, exist_ok=True)
        EXAMPLE.write_text(HEADER + "".join(f"---\n{COMMENTS[o['kind']]}\n{dump_yaml(o)}" for o in expected))
    written = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
    assert written == expected, "infra/examples/sandbox-pool.yaml differs from the generator (see the docstring)"


def test_the_example_carries_the_baseline_the_seed_names():
    objects = {d["kind"]: d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d}
    pod = objects["Deployment"]["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert c["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                    "seccompProfile": {"type": "RuntimeDefault"}}
    assert pod["automountServiceAccountToken"] is False
    assert c["resources"]["requests"] == {"cpu": "1", "memory": "2Gi", "ephemeral-storage": "10Gi"}
    assert objects["PodDisruptionBudget"]["spec"]["maxUnavailable"] == 1
    policy = objects["NetworkPolicy"]["spec"]
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    assert policy["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 9090}]
