#!/usr/bin/env bash
# Offline validation of the hand-written example manifests and the generator's rendered output.
#
# With kubeconform on PATH: `kubeconform -strict` (built-in kinds; CRDs skipped, as kubeconform
# has no ray.io schemas). Otherwise, or with VALIDATOR=builtin: `dockyard-k8s validate`, which
# is at least as strict and also checks the RayJob/RayCluster CRDs.
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

# 1. The generator's output: every example infra x every launch mode.
for infra in examples/*.infra.yaml; do
  base="$(basename "$infra" .infra.yaml)"
  for mode in rayjob bringup attach; do
    extra=()
    [[ "$mode" == attach ]] && extra=(--set launch.attach.cluster=existing)
    "$DOCKYARD" render examples/grpo_swe.yaml --infra "$infra" --set "launch.mode=$mode" "${extra[@]}" \
      > "$out/${base}-${mode}.yaml"
  done
done

# 2. Hand-written manifests: any example YAML that is a Kubernetes object (has a top-level kind).
mapfile -t handwritten < <(grep -rlE '^kind:' examples --include='*.yaml' --include='*.yml' || true)

echo "validating with $VALIDATOR: ${#handwritten[@]} hand-written file(s) + rendered output of every example"
if [[ "$VALIDATOR" == kubeconform ]]; then
  kubeconform -strict -summary -ignore-missing-schemas -kubernetes-version "${KUBERNETES_VERSION:-1.29.0}" \
    "${handwritten[@]}" "$out"
else
  "$DOCKYARD" validate --summary --kubernetes-version "${KUBERNETES_VERSION:-1.29}" "${handwritten[@]}" "$out"
fi
