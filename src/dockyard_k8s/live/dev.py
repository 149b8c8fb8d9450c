"""The CPU dev pod (setup work: clone, download models, debug) and its Secret.

Builders are pure. Secret values only ever travel in the request body: they are not
printed, not logged (the client logs method, path and status only) and not put in
error messages; :func:`describe_secret` shows key names only.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterable
from contextlib import closing
from typing import Any

from dockyard_k8s.errors import ClusterError, UsageError
from dockyard_k8s.kube import format_ref
from dockyard_k8s.live.client import KubeClient
from dockyard_k8s.live.diagnose import pod_findings
from dockyard_k8s.live.kinds import POD
from dockyard_k8s.live.orchestrate import watch_for
from dockyard_k8s.names import is_config_key  # a Secret data key, as the API server checks it
from dockyard_k8s.plain import dig
from dockyard_k8s.render.meta import MANAGED_BY

DEV_NAME = "dockyard-dev"
DEV_LABEL = "dockyard-k8s/dev"
SECRET_MOUNT = "/var/run/secrets/dockyard-dev"


def secret_name(dev: str) -> str:
    return f"{dev}-secrets"


def _labels(dev: str) -> dict[str, str]:
    return {"app.kubernetes.io/component": "dev", "app.kubernetes.io/managed-by": MANAGED_BY,
            "app.kubernetes.io/name": "dockyard-k8s", DEV_LABEL: dev}


def dev_pod(namespace: str, *, name: str = DEV_NAME, image: str, pull_secrets: Iterable[str] = (),
            cpu: str = "2", memory: str = "8Gi", pvc: str | None = None,
            image_pull_policy: str = "IfNotPresent") -> dict[str, Any]:
    """A CPU-only pod that sleeps, with the dev Secret as files and environment (both optional,
    so the pod starts before any secret is set)."""
    container: dict[str, Any] = {
        "name": "dev",
        "image": image,
        "imagePullPolicy": image_pull_policy,
        "command": ["sleep", "infinity"],
        "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}],
        "envFrom": [{"secretRef": {"name": secret_name(name), "optional": True}}],
        "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}},
        "volumeMounts": [{"name": "secrets", "mountPath": SECRET_MOUNT, "readOnly": True}],
    }
    volumes: list[dict[str, Any]] = [{"name": "secrets", "secret": {"secretName": secret_name(name),
                                                                    "optional": True}}]
    if pvc:
        container["volumeMounts"].append({"name": "workspace", "mountPath": "/workspace"})
        volumes.append({"name": "workspace", "persistentVolumeClaim": {"claimName": pvc}})
    spec: dict[str, Any] = {"containers": [container], "volumes": volumes, "terminationGracePeriodSeconds": 5,
                            "restartPolicy": "Always"}
    if pull_secrets:
        spec["imagePullSecrets"] = [{"name": s} for s in pull_secrets]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": _labels(name)}, "spec": spec}


def dev_secret(namespace: str, dev: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": secret_name(dev), "namespace": namespace, "labels": _labels(dev)},
            "type": "Opaque",
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in sorted(data.items())}}


def decode_secret_data(secret: dict[str, Any] | None) -> dict[str, str]:
    return {k: base64.b64decode(v).decode(errors="replace") for k, v in (dig(secret, "data") or {}).items()}


def parse_dotenv(text: str, source: str) -> dict[str, str]:
    out = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.removeprefix("export ").partition("=")
        if not sep or not is_config_key(key.strip()):
            raise UsageError(f"{source}:{number}: expected KEY=VALUE")  # no value echoed
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key.strip()] = value
    return out


def parse_secret_args(pairs: Iterable[str], files: Iterable[str], *,
                      prompt: Callable[[str], str]) -> dict[str, str]:
    """``KEY=VALUE``, ``KEY`` (asked for, not echoed), ``--from-file .env`` or ``--from-file KEY=PATH``."""
    out: dict[str, str] = {}
    for spec in files:
        key, sep, path = spec.partition("=")
        if sep and is_config_key(key) and os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                out[key] = f.read()
            continue
        try:
            with open(spec, encoding="utf-8") as f:
                out.update(parse_dotenv(f.read(), spec))
        except OSError as e:
            raise UsageError(f"--from-file {spec}: cannot read: {e.strerror}") from e
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not is_config_key(key):
            raise UsageError(f"secret key {key!r}: expected letters, digits, '-', '_' or '.'")
        out[key] = value if sep else prompt(f"{key}: ")
    if not out:
        raise UsageError("nothing to set: give KEY=VALUE, KEY (prompted) or --from-file FILE")
    return out


def describe_secret(name: str, keys: Iterable[str], changed: Iterable[str]) -> str:
    changed = sorted(changed)
    return (f"secret {name}: {len(changed)} key(s) set ({', '.join(changed)}); keys now: "
            f"{', '.join(sorted(keys))} (values not shown); mounted at {SECRET_MOUNT} and as environment")


def wait_pod_running(client: KubeClient, namespace: str, name: str, *, timeout: float,
                     say: Callable[[str], None] = print) -> None:
    """Watch one pod until it runs; its problems are printed as they appear, and one that
    cannot heal (bad image, missing secret) ends the wait with a ClusterError."""
    seen: set[tuple[str, str]] = set()
    what = format_ref("Pod", namespace, name)
    with closing(watch_for(client, POD, namespace, timeout=timeout, field_selector=f"metadata.name={name}")) as events:
        for ev in events:
            pods = ev.items if ev.type == "SYNC" else ([] if ev.type == "DELETED" else [ev.obj])
            for pod in pods:
                if (pod.get("status") or {}).get("phase") == "Running":
                    return
                for f in pod_findings(pod):
                    if f.key not in seen:
                        seen.add(f.key)
                        say(f"✖ {f.pod}: {f.reason}: {f.message}\n  hint: {f.hint}")
                    if f.fatal:
                        raise ClusterError(f"{f.reason}: {f.message}", obj=what, hint=f.hint)
    raise ClusterError(f"not running after {int(timeout)}s", obj=what,
                       hint=f"kubectl -n {namespace} describe pod {name}")
