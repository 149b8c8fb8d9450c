#!/usr/bin/env bash
# The test control plane (real kube-apiserver, etcd, controller-manager, scheduler, kwok, KubeRay,
# Kueue on 127.0.0.1): scripts/controlplane.sh build|up|down|env|status|logs [--name NAME].
# See e2e/controlplane/README.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
py="$root/.venv/bin/python"
[ -x "$py" ] || py=python3
exec "$py" "$root/e2e/controlplane/controlplane.py" "$@"
