#!/usr/bin/env bash
# Offline validation of the hand-written example manifests and the generator's rendered output:
# every example infra x every launch mode (rayjob, bringup, attach, job, statefulset), which
# covers every platform profile; the NCCL test MPIJob of the platform examples; every model
# endpoint (serve) example; and the hand-written manifests (infra/examples/sandbox-pool.yaml and
# any example YAML with a top-level kind).
#
# With kubeconform on PATH: `kubeconform -strict` (built-in kinds; CRDs skipped, as kubeconform
# has no ray.io schemas). Otherwise, or with VALIDATOR=builtin: `dockyard-k8s validate`, which
# is at least as strict and also checks the CRDs it bundles (KubeRay, Kueue, KEDA) and the
# MPI Operator's (tests/flows/crds/mpi-operator).
#
#   bash scripts/validate-manifests.sh            # exit 0 valid, 1 invalid, 2 setup problem
#   VALIDATOR=builtin bash scripts/validate-manifests.sh
set -euo pipefail
cd "$(dirname "$0")/.."

DOCKYARD="${DOCKYARD:-dockyard-k8s}"
if ! command -v "$DOCKYARD" >/dev/null 2>&1; then
  DOCKYARD=".venv/bin/dockyard-k8s"
fi
VALIDATOR="${VALIDATOR:-auto}"
if [[ "$VALIDATOR" == auto ]]; then
  if command -v kubeconform >/dev/null 2>&1; then VALIDATOR=kubeconform; else VALIDATOR=builtin; fi
fi

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

recipe_of() {  # the recipe an example infra runs (the one-GPU profiles run the tiny one)
  case "$1" in
    kind_*|k3s_*) echo examples/grpo_tiny.yaml ;;
    *) echo examples/grpo_swe.yaml ;;
  esac
}

# 1. The generator's output: every example infra x every launch mode.
for infra in examples/*.infra.yaml; do
  base="$(basename "$infra" .infra.yaml)"
  recipe="$(recipe_of "$base")"
  for mode in rayjob bringup attach job statefulset; do
    extra=()
    case "$mode" in
      attach) extra=(--set launch.attach.cluster=existing) ;;
      # one pod on one node: one pod per fleet, and a head that shares the GPU node
      job) extra=(--set kuberay.trainer.replicas=1 --set kuberay.inference.replicas=0
                  --set kuberay.head.nodeSelector=null --set kuberay.head.cpu=2 --set kuberay.head.memory=8Gi) ;;
    esac
    "$DOCKYARD" render "$recipe" --infra "$infra" --set "launch.mode=$mode" "${extra[@]}" \
      > "$out/${base}-${mode}.yaml"
  done
done

# 2. The NCCL fabric test of the platform examples (kind needs an image: eks has the public one).
"$DOCKYARD" nccl-test examples/grpo_swe.yaml --infra examples/eks_p5.infra.yaml > "$out/eks_p5-nccl-test.yaml"
"$DOCKYARD" nccl-test examples/grpo_tiny.yaml --infra examples/kind_single_gpu.infra.yaml \
  --set ncclTest.image=registry.example.com/nccl-tests:2.16.9 > "$out/kind_single_gpu-nccl-test.yaml"

# 3. Model endpoints.
for spec in examples/*.serve.yaml; do
  "$DOCKYARD" serve render "$spec" > "$out/$(basename "$spec" .yaml).yaml"
done

# 4. Hand-written manifests: any example YAML that is a Kubernetes object (has a top-level kind).
mapfile -t handwritten < <(grep -rlE '^kind:' examples infra/examples --include='*.yaml' --include='*.yml' \
                           2>/dev/null || true)

rendered=("$out"/*.yaml)
echo "rendered ${#rendered[@]} file(s): $(cd "$out" && ls | tr '\n' ' ')"
echo "hand-written: ${handwritten[*]}"
echo "validating with $VALIDATOR: ${#handwritten[@]} hand-written file(s) + rendered output of every example"
if [[ "$VALIDATOR" == kubeconform ]]; then
  kubeconform -strict -summary -ignore-missing-schemas -kubernetes-version "${KUBERNETES_VERSION:-1.29.0}" \
    "${handwritten[@]}" "$out"
else
  # the MPIJob of the NCCL test: the MPI Operator's CRD (v0.8.0, byte for byte; tests/flows/crds/PROVENANCE.md)
  "$DOCKYARD" validate --summary --kubernetes-version "${KUBERNETES_VERSION:-1.29}" \
    --crd tests/flows/crds/mpi-operator "${handwritten[@]}" "$out"
fi
