"""Environment variables and ConfigMaps: secrets written as literals (what is one:
``dockyard_k8s.credentials``), env names defined twice."""

from __future__ import annotations

from collections.abc import Iterator

from dockyard_k8s.credentials import looks_like_credential, secret_by_value, token_in
from dockyard_k8s.lint.model import ERROR, Context, Hit, Obj, Rule
from dockyard_k8s.lint.rules._util import cname


def secrets_in_env(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        for path, k in pod.containers():
            for i, e in enumerate(k.get("env") or []):
                if not isinstance(e, dict) or "value" not in e:
                    continue
                name, value = str(e.get("name", "")), str(e.get("value") or "")
                if not value or value.startswith("$("):
                    continue
                what = token_in(value)
                if what:
                    yield Hit((*path, "env", i, "value"),
                              f"container {cname(k)!r}: env {name} holds {what} as a literal value")
                elif looks_like_credential(name):
                    yield Hit((*path, "env", i, "value"),
                              f"container {cname(k)!r}: env {name} looks like a credential written as a literal value")


def secrets_in_configmap(o: Obj, c: Context) -> Iterator[Hit]:
    """A ConfigMap's value judged with its key (``envFrom`` turns each key into an env name; a file
    key's text may hold a token): ConfigMaps are readable wherever the namespace's ConfigMaps are."""
    data = o.get("data") if o.kind == "ConfigMap" else None
    for key, value in data.items() if isinstance(data, dict) else ():
        what = secret_by_value(str(key), value)
        if what:
            yield Hit(("data", str(key)), f"data key {key} holds {what} as a literal value")


def duplicate_env(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        for path, k in pod.containers():
            seen: dict[str, int] = {}
            for i, e in enumerate(k.get("env") or []):
                if not isinstance(e, dict):
                    continue
                name = str(e.get("name", ""))
                if name in seen:
                    yield Hit((*path, "env", i), f"container {cname(k)!r}: env {name} is defined twice "
                                                 f"(entries {seen[name]} and {i}); the last one wins silently")
                else:
                    seen[name] = i


RULES = (
    Rule("secret-in-env", ERROR, "Credentials must not be written as literal environment values",
         "A literal env value is stored in the manifest, the rendered files in git, the API server and every "
         "`kubectl get -o yaml`. Fix: keep the credential in a Secret and reference it with "
         "valueFrom.secretKeyRef (as the example does for WANDB_API_KEY).",
         ("kube-linter env-var-secret", "Polaris sensitiveContainerEnvVar", "Checkov"), secrets_in_env),
    Rule("secret-in-configmap", ERROR, "Credentials must not be written into a ConfigMap",
         "A ConfigMap is not a Secret: RBAC that reads ConfigMaps (most roles do) reads it, it is not encrypted "
         "at rest, and it is shown by `kubectl describe`. A token-shaped value, or a literal value under a key "
         "whose name announces a credential (WANDB_API_KEY, loaded by envFrom), is one. Fix: move it into a "
         "Secret and reference it with secretKeyRef or envFrom.secretRef.",
         ("Kubernetes docs, ConfigMaps: \"does not provide secrecy or encryption\"",),
         secrets_in_configmap),
    Rule("duplicate-env", ERROR, "A container must not define an environment variable twice",
         "When an env name appears twice the last entry wins without a warning, so a value set in one place (a "
         "fleet's env, kuberay.spec, an overlay) is silently overridden by another. Fix: keep one entry per name.",
         ("kube-linter duplicate-env-var",), duplicate_env),
)
