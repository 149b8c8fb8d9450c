"""Every Kubernetes request the launcher makes, built as plain data (no network).

``prepare_*`` functions are pure: tests assert on their output, and
:class:`~dockyard_k8s.live.client.KubeClient` is the one place that sends them.

Facts these follow (Kubernetes API conventions, "Server-Side Apply" docs):
* server-side apply is ``PATCH`` with ``Content-Type: application/apply-patch+yaml`` and a
  mandatory ``fieldManager``; it creates the object when absent (201) and is a no-op
  (same resourceVersion) when nothing changed;
* ``dryRun=All`` runs admission and validation without persisting;
* a watch is a list call with ``watch=true``; ``resourceVersion`` resumes after that
  version; ``allowWatchBookmarks`` lets the server advance it while nothing changes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dockyard_k8s.live.kinds import Kind, collection_path, kind_for, kind_of, object_path, ref

FIELD_MANAGER = "dockyard-k8s"
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
# Server-side watch timeout: the server closes the stream after this and we resume
# from the last resourceVersion (client-go uses a random 5-10 min; we stay below LB idle limits).
WATCH_TIMEOUT_SECONDS = 290


@dataclass(frozen=True, slots=True)
class Request:
    """One HTTP request to the API server, relative to the cluster URL."""

    method: str
    path: str
    params: tuple[tuple[str, str], ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    obj: str = ""  # the object named in errors ("RayJob ns/name")
    stream: bool = False  # a watch or a followed log: read line by line

    def param(self, key: str) -> str | None:
        return dict(self.params).get(key)


def selector_text(labels: Mapping[str, str]) -> str:
    """``{"a": "1", "b": "2"}`` -> ``a=1,b=2`` (sorted, so requests are deterministic)."""
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _params(**kwargs: Any) -> tuple[tuple[str, str], ...]:
    out = []
    for key, value in kwargs.items():
        if value is None or value == "" or value is False:
            continue
        out.append((key, "true" if value is True else str(value)))
    return tuple(out)


def prepare_apply(obj: dict[str, Any], *, field_manager: str = FIELD_MANAGER, force: bool = False,
                  dry_run: bool = False) -> Request:
    """Server-side apply of one object (creates it when absent).

    The body is JSON, which is valid YAML for the ``apply-patch+yaml`` content type
    (kubectl sends JSON the same way). ``fieldValidation=Strict``, as kubectl sends it:
    a field the server's schema lacks fails the apply instead of being dropped.
    """
    kind = kind_of(obj)
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") if kind.namespaced else None
    name = str(meta.get("name", ""))
    return Request(
        "PATCH",
        object_path(kind, ns, name),
        _params(fieldManager=field_manager, fieldValidation="Strict", force=force,
                dryRun="All" if dry_run else None),
        (("Content-Type", APPLY_CONTENT_TYPE), ("Accept", "application/json")),
        json.dumps(obj, sort_keys=False).encode(),
        ref(kind.kind, ns, name),
    )


def prepare_get(kind: Kind, namespace: str | None, name: str) -> Request:
    ns = namespace if kind.namespaced else None
    return Request("GET", object_path(kind, ns, name), obj=ref(kind.kind, ns, name))


def prepare_list(kind: Kind, namespace: str | None, *, label_selector: str = "", field_selector: str = "",
                 resource_version: str = "", limit: int = 0, continue_token: str = "") -> Request:
    """One LIST call (one chunk of ``limit`` items when given, the next after ``continue_token``),
    filtered server-side (never one request per pod)."""
    return Request("GET", collection_path(kind, namespace),
                   _params(labelSelector=label_selector, fieldSelector=field_selector,
                           resourceVersion=resource_version, limit=limit or None, **{"continue": continue_token}),
                   obj=f"{kind.plural} in {namespace}" if namespace and kind.namespaced else kind.plural)


def prepare_watch(kind: Kind, namespace: str | None, *, label_selector: str = "", field_selector: str = "",
                  resource_version: str = "", timeout_seconds: int = WATCH_TIMEOUT_SECONDS) -> Request:
    return Request("GET", collection_path(kind, namespace),
                   _params(watch=True, labelSelector=label_selector, fieldSelector=field_selector,
                           resourceVersion=resource_version, allowWatchBookmarks=True,
                           timeoutSeconds=timeout_seconds),
                   obj=f"{kind.plural} in {namespace}" if namespace and kind.namespaced else kind.plural,
                   stream=True)


def prepare_delete(kind: Kind, namespace: str | None, name: str, *, propagation: str = "Background",
                   dry_run: bool = False) -> Request:
    """Delete one object; ``Background`` lets the garbage collector remove what it owns
    (a RayJob's RayCluster and submitter Job, a Deployment's pods)."""
    ns = namespace if kind.namespaced else None
    return Request("DELETE", object_path(kind, ns, name),
                   _params(propagationPolicy=propagation, dryRun="All" if dry_run else None),
                   obj=ref(kind.kind, ns, name))


def prepare_logs(namespace: str, pod: str, *, container: str = "", follow: bool = False, tail: int | None = None,
                 since_seconds: int | None = None, previous: bool = False, timestamps: bool = False) -> Request:
    kind = kind_for("v1", "Pod")
    return Request("GET", object_path(kind, namespace, pod, "log"),
                   _params(container=container, follow=follow, tailLines=tail, sinceSeconds=since_seconds,
                           previous=previous, timestamps=timestamps),
                   obj=ref("Pod", namespace, pod), stream=follow)


def prepare_access_review(verb: str, resource: str, *, group: str = "", namespace: str = "",
                          subresource: str = "") -> Request:
    """``kubectl auth can-i VERB RESOURCE``: a SelfSubjectAccessReview (POST, nothing persisted)."""
    attrs = {k: v for k, v in {"namespace": namespace, "verb": verb, "group": group, "resource": resource,
                               "subresource": subresource}.items() if v}
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attrs}}
    return Request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", (),
                   (("Content-Type", "application/json"),), json.dumps(body).encode(),
                   f"can-i {verb} {resource}{'/' + subresource if subresource else ''}")


def prepare_version() -> Request:
    return Request("GET", "/version", obj="API server version")
