#!/usr/bin/env bash
# dockyard-k8s: Ray without the KubeRay operator (launch.mode job | statefulset).
#
# Shipped in the dockyard-k8s package and mounted from the run's <run>-bootstrap ConfigMap,
# so no bash lives inline in YAML (the pitfalls of the EKS manifests text).
#
#   ray-bootstrap.sh          start this pod: the head (start Ray, wait for every node,
#                             run the entrypoint) or a worker (wait for the head, join)
#   ray-bootstrap.sh probe    liveness probe: checks the Ray head only, never fails a worker
#   ray-bootstrap.sh status   prints "starting", "running" or "finished <exit code>"
#
# Configuration, all from the environment (rendered by dockyard-k8s):
#   POD_NAME, POD_NAMESPACE       Downward API (metadata.name, metadata.namespace)
#   DOCKYARD_HEAD_POD             pod that runs the head; empty: this pod is the head (Job)
#   DOCKYARD_HEAD_SERVICE         headless Service giving the head its DNS name
#   DOCKYARD_CLUSTER_DOMAIN       cluster DNS domain (cluster.local)
#   DOCKYARD_NUM_NODES            Ray nodes the head waits for, itself included
#   DOCKYARD_TIMEOUT_SECONDS      how long the head waits for them / a worker for the head
#   DOCKYARD_POLL_SECONDS         seconds between two checks
#   DOCKYARD_RAY_RESOURCES        JSON for `ray start --resources` (the dockyard_fleet_* tags)
#   DOCKYARD_RAY_START_ARGS       more `ray start` arguments, space-separated
#   DOCKYARD_ENTRYPOINT           the job's command (a shell command line), run by the head
#   DOCKYARD_AFTER_FINISH         exit: leave with the entrypoint's code (Job);
#                                 hold: keep the pod and Ray up for inspection (StatefulSet,
#                                 whose pods would otherwise restart and train again)
#   DOCKYARD_HOLD_SECONDS         hold this long then exit (0: until the run is deleted)
#   DOCKYARD_STATE_DIR            emptyDir that survives container restarts
#   DOCKYARD_PYTHON               python with ray, for counting nodes (python3)
set -euo pipefail

NUM_NODES="${DOCKYARD_NUM_NODES:-1}"
TIMEOUT="${DOCKYARD_TIMEOUT_SECONDS:-300}"
POLL="${DOCKYARD_POLL_SECONDS:-5}"
STATE_DIR="${DOCKYARD_STATE_DIR:-/var/run/dockyard}"
AFTER_FINISH="${DOCKYARD_AFTER_FINISH:-exit}"
GCS_PORT=6379

# Alive nodes only: ray.nodes() also lists nodes that died.
COUNT_NODES_PY='import ray
ray.init(address="auto", logging_level="ERROR", log_to_driver=False)
print(sum(1 for n in ray.nodes() if n.get("Alive")))'

log() {
    printf '%s [ray-bootstrap] %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*"
}

is_head() {
    [ -z "${DOCKYARD_HEAD_POD:-}" ] || [ "${POD_NAME:-${HOSTNAME:-}}" = "${DOCKYARD_HEAD_POD}" ]
}

head_address() {
    printf '%s.%s.%s.svc.%s:%s' "${DOCKYARD_HEAD_POD}" "${DOCKYARD_HEAD_SERVICE:?}" \
        "${POD_NAMESPACE:-default}" "${DOCKYARD_CLUSTER_DOMAIN:-cluster.local}" "${GCS_PORT}"
}

# Runs "$@" with a time limit when coreutils' timeout is there (a hung GCS must not hang us).
bounded() {
    if command -v timeout >/dev/null 2>&1; then
        timeout 60 "$@"
    else
        "$@"
    fi
}

alive_nodes() {
    local out
    out="$(bounded "${DOCKYARD_PYTHON:-python3}" -c "${COUNT_NODES_PY}" 2>/dev/null | tail -n 1)" || out=0
    case "${out}" in
        '' | *[!0-9]*) echo 0 ;;
        *) echo "${out}" ;;
    esac
}

ray_start_args() {
    # One argument per word; values with spaces are not supported (rayStartParams rarely have any).
    read -r -a EXTRA_ARGS <<< "${DOCKYARD_RAY_START_ARGS:-}"
    if [ -n "${DOCKYARD_RAY_RESOURCES:-}" ]; then
        EXTRA_ARGS+=("--resources=${DOCKYARD_RAY_RESOURCES}")
    fi
}

finish() {
    local code="$1"
    if [ "${AFTER_FINISH}" = "hold" ]; then
        log "holding the pod (and Ray) for inspection; delete the run to release its nodes"
        local held=0
        while [ "${DOCKYARD_HOLD_SECONDS:-0}" -eq 0 ] || [ "${held}" -lt "${DOCKYARD_HOLD_SECONDS}" ]; do
            sleep "${POLL}"
            held=$((held + POLL))
        done
    else
        ray stop >/dev/null 2>&1 || true
    fi
    exit "${code}"
}

run_head() {
    mkdir -p "${STATE_DIR}"
    if [ -f "${STATE_DIR}/exit-code" ]; then
        # The container restarted after the entrypoint ended: never train twice.
        log "the entrypoint already finished with exit code $(cat "${STATE_DIR}/exit-code"); not running it again"
        finish "$(cat "${STATE_DIR}/exit-code")"
    fi
    ray_start_args
    log "starting the Ray head (waiting for ${NUM_NODES} node(s), timeout ${TIMEOUT}s)"
    ray start --head --port="${GCS_PORT}" --dashboard-host=0.0.0.0 --disable-usage-stats \
        ${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"}
    touch "${STATE_DIR}/head-started"

    local deadline=$((SECONDS + TIMEOUT)) alive
    while true; do
        alive="$(alive_nodes)"
        if [ "${alive}" -ge "${NUM_NODES}" ]; then
            break
        fi
        if [ "${SECONDS}" -ge "${deadline}" ]; then
            log "ERROR: timed out after ${TIMEOUT}s waiting for Ray nodes: ${alive}/${NUM_NODES} connected"
            exit 1
        fi
        log "waiting for Ray nodes: ${alive}/${NUM_NODES} connected"
        sleep "${POLL}"
    done

    log "all ${NUM_NODES} Ray node(s) connected; running the entrypoint"
    local code=0
    bash -c "${DOCKYARD_ENTRYPOINT:?DOCKYARD_ENTRYPOINT is not set}" || code=$?
    echo "${code}" > "${STATE_DIR}/exit-code"
    log "the entrypoint finished with exit code ${code}"
    finish "${code}"
}

run_worker() {
    local address deadline
    address="$(head_address)"
    deadline=$((SECONDS + TIMEOUT))
    until bounded ray health-check --address "${address}" >/dev/null 2>&1; do
        if [ "${SECONDS}" -ge "${deadline}" ]; then
            log "ERROR: timed out after ${TIMEOUT}s waiting for the Ray head at ${address}"
            exit 1
        fi
        log "waiting for the Ray head at ${address}"
        sleep "${POLL}"
    done
    ray_start_args
    log "joining the Ray head at ${address}"
    exec ray start --address="${address}" --block --disable-usage-stats ${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"}
}

probe() {
    # Workers: always healthy here (a dead head makes `ray start --block` exit on its own).
    is_head || exit 0
    # Not started yet (image pull, ray start) or finished and holding: nothing to check.
    [ -f "${STATE_DIR}/head-started" ] || exit 0
    [ ! -f "${STATE_DIR}/exit-code" ] || exit 0
    bounded ray health-check >/dev/null 2>&1
}

status() {
    if [ -f "${STATE_DIR}/exit-code" ]; then
        echo "finished $(cat "${STATE_DIR}/exit-code")"
    elif [ -f "${STATE_DIR}/head-started" ]; then
        echo "running"
    else
        echo "starting"
    fi
}

main() {
    case "${1:-start}" in
        start)
            if is_head; then
                run_head
            else
                run_worker
            fi
            ;;
        probe) probe ;;
        status) status ;;
        *)
            echo "usage: ray-bootstrap.sh [start|probe|status]" >&2
            exit 2
            ;;
    esac
}

main "$@"
