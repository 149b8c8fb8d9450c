#!/usr/bin/env bash
# A local dockyard-k8s playground: a one-node kind cluster (GPU passthrough when the host has
# an NVIDIA GPU, CPU-only otherwise) with the KubeRay operator, then the `dockyard-k8s run`
# command for an example sized for it. Documented in docs/platforms.md ("Local playground").
#
#   scripts/playground.sh up [--gpu|--cpu] [--name NAME]   create the cluster, install operators
#   scripts/playground.sh print-run [--gpu|--cpu]          only print the run command
#   scripts/playground.sh down [--name NAME]               delete the cluster
#
# Needs: docker, kind, kubectl, helm; for --gpu, an NVIDIA driver, the NVIDIA Container
# Toolkit as Docker's default runtime with accept-nvidia-visible-devices-as-volume-mounts=true
# (NVIDIA's nvkind prerequisites). Environment: PLAYGROUND_NAME (dockyard),
# PLAYGROUND_WAIT_SECONDS (600: how long to wait for the GPU to show up on the node).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NAME="${PLAYGROUND_NAME:-dockyard}"
NAMESPACE=dockyard                       # the namespace of the kind examples
KIND_NODE_IMAGE=kindest/node:v1.30.4     # the single-node text's CI reference image
KUBERAY_CHART_VERSION=1.7.0              # the KubeRay CRDs dockyard-k8s validates against
GPU_OPERATOR_CHART_VERSION=v25.10.1
WAIT_SECONDS="${PLAYGROUND_WAIT_SECONDS:-600}"

log() { printf '[playground] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

need() {
    local tool
    for tool in "$@"; do
        command -v "${tool}" >/dev/null 2>&1 || die "${tool} is not installed (needed: $*)"
    done
}

has_gpu() {
    # No pipe into `grep -q`: with pipefail its early exit can SIGPIPE nvidia-smi into a false "no".
    local gpus
    command -v nvidia-smi >/dev/null 2>&1 || return 1
    gpus="$(nvidia-smi -L 2>/dev/null)" || return 1
    case "${gpus}" in
        GPU\ *) return 0 ;;
        *) return 1 ;;
    esac
}

run_command() {
    # The example sized for this cluster: one 24 GB GPU, or no GPU at all.
    local infra=examples/kind_cpu.infra.yaml
    if [ "$1" = gpu ]; then
        infra=examples/kind_single_gpu.infra.yaml
    fi
    printf 'dockyard-k8s run examples/grpo_tiny.yaml --infra %s\n' "${infra}"
}

wait_for_gpu() {
    local deadline=$((SECONDS + WAIT_SECONDS)) gpus
    while true; do
        gpus="$(kubectl get nodes -o jsonpath='{.items[0].status.allocatable.nvidia\.com/gpu}' 2>/dev/null || true)"
        if [ -n "${gpus}" ] && [ "${gpus}" != 0 ]; then
            log "the node advertises ${gpus} nvidia.com/gpu"
            return 0
        fi
        [ "${SECONDS}" -lt "${deadline}" ] || die "no nvidia.com/gpu on the node after ${WAIT_SECONDS}s (kubectl -n gpu-operator get pods)"
        sleep 5
    done
}

up() {
    local mode="$1"
    need docker kind kubectl helm
    log "creating kind cluster ${NAME} (${mode}, ${KIND_NODE_IMAGE})"
    kind create cluster --name "${NAME}" --image "${KIND_NODE_IMAGE}" \
        --config "${REPO}/infra/kind/cluster-${mode}.yaml" --wait 300s
    if [ "${mode}" = gpu ]; then
        # nvkind's fix-ups: the node must not see the host's /proc/driver/nvidia mount, and the
        # toolkit expects ldconfig.real (Debian/Ubuntu naming) inside the node.
        docker exec "${NAME}-control-plane" umount -R /proc/driver/nvidia || true
        docker exec "${NAME}-control-plane" ln -sf /sbin/ldconfig /sbin/ldconfig.real
        helm repo add nvidia https://helm.ngc.nvidia.com/nvidia --force-update >/dev/null
        helm upgrade --install gpu-operator nvidia/gpu-operator --version "${GPU_OPERATOR_CHART_VERSION}" \
            --namespace gpu-operator --create-namespace \
            --values "${REPO}/infra/helm/gpu-operator-values.yaml" --wait --timeout 15m
        wait_for_gpu
    fi
    helm repo add kuberay https://ray-project.github.io/kuberay-helm/ --force-update >/dev/null
    helm upgrade --install kuberay-operator kuberay/kuberay-operator --version "${KUBERAY_CHART_VERSION}" \
        --namespace kuberay-system --create-namespace \
        --values "${REPO}/infra/helm/kuberay-operator-values.yaml" --wait --timeout 10m
    kubectl get namespace "${NAMESPACE}" >/dev/null 2>&1 || kubectl create namespace "${NAMESPACE}" >/dev/null
    log "ready: kind-${NAME} with the KubeRay operator; the run for it:"
    run_command "${mode}"
}

main() {
    local action="${1:-}" mode=""
    [ $# -gt 0 ] && shift
    while [ $# -gt 0 ]; do
        case "$1" in
            --gpu) mode=gpu ;;
            --cpu) mode=cpu ;;
            --name)
                [ $# -ge 2 ] || die "--name needs a value"
                NAME="$2"
                shift
                ;;
            *) die "unknown option $1" ;;
        esac
        shift
    done
    if [ -z "${mode}" ]; then
        if has_gpu; then mode=gpu; else mode=cpu; fi
    fi
    case "${action}" in
        up) up "${mode}" ;;
        print-run) run_command "${mode}" ;;
        down)
            need kind
            kind delete cluster --name "${NAME}"
            ;;
        *)
            echo "usage: scripts/playground.sh up|print-run|down [--gpu|--cpu] [--name NAME]" >&2
            exit 2
            ;;
    esac
}

main "$@"
