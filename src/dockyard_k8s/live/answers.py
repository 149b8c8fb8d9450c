"""What the API server's answers say, in our words: an error answer as a ClusterError naming the
object with a hint (a namespace missing or being deleted, a CRD that lacks a field the run sets,
RBAC, conflicts), the texts of its Warning headers, and why a connection failed.

lightkube's ``transform_exception`` builds its ApiError only for a body typed exactly
``application/json`` (and fails with KeyError when the header is missing): :func:`worded` reads
the plain ``httpx2`` error, or the Status of a watch's in-stream ERROR event.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

import httpx2
import msgspec
from lightkube.core.exceptions import ApiError

from dockyard_k8s.errors import ClusterError
from dockyard_k8s.kube import as_mapping
from dockyard_k8s.live import crdfields

# One-line hints by HTTP status, shown under the error.
STATUS_HINTS = {
    401: "the cluster rejected the credentials: refresh them (e.g. `kubectl get ns` re-runs your login plugin)",
    403: "missing RBAC permission: `dockyard-k8s doctor RECIPE` lists every verb the launcher needs",
    404: "not found: for ray.io kinds, is the KubeRay operator (its CRDs) installed? see `dockyard-k8s doctor`",
    409: "another field manager owns these fields (kubectl edit, an operator): re-run with --force-conflicts "
         "to take them over, or --replace",
    422: "the API server rejected the object as invalid: run `dockyard-k8s check` and compare with the message",
}


def unreachable_reason(e: Exception, connect_timeout: float) -> str:
    """Why a connection failed, in words (httpx wraps the socket/ssl error text); ``connect_timeout``:
    the seconds a connection was given."""
    text = str(e) or type(e).__name__
    low = text.lower()
    if isinstance(e, httpx2.ConnectTimeout) or "timed out" in low:
        return f"no answer within {connect_timeout:g} s (connect timeout): a firewall, VPN or wrong address?"
    if "refused" in low:
        return "connection refused (nothing listens there)"
    if any(s in low for s in ("name or service not known", "nodename nor servname", "name resolution",
                              "no address associated")):
        return "the host name does not resolve (DNS)"
    if "certificate verify failed" in low or "certificate_verify_failed" in low:
        return (f"the server's TLS certificate is not trusted ({text}): check the cluster's "
                "certificate-authority(-data) in the kubeconfig")
    if "network is unreachable" in low or "no route to host" in low:
        return "no route to the host (network unreachable)"
    return text


# A server-side apply the schema refuses is answered 500 (structured-merge-diff's conversion
# error is not an API status): permanent, never worth a retry.
SCHEMA_REFUSED = "failed to create typed patch object"
# The API server's refusal of a create in a namespace being deleted (apiserver's namespace
# lifecycle admission): 403 Forbidden, cause NamespaceTerminating.
_TERMINATING = re.compile(r"unable to create new content in namespace (\S+) because it is being terminated")
# RFC 7234 warning-values: 299 - "text" (several per header, comma separated)
_WARNING = re.compile(r'\d{3}\s+\S+\s+"((?:[^"\\]|\\.)*)"')


def warnings_of(resp: httpx2.Response) -> list[str]:
    """The texts of a response's ``Warning`` headers (admission webhooks, pruned fields,
    deprecated versions)."""
    out = []
    for value in resp.headers.get_list("warning"):
        found = _WARNING.findall(value)
        out += [re.sub(r"\\(.)", r"\1", text) for text in found] if found else [value]
    return out


def api_error(status: int, body: bytes, obj: str) -> ClusterError:
    """A failed answer as a ClusterError naming the object ``obj`` (``RayJob ns/name``), from the
    Status body when there is one."""
    try:
        doc = as_mapping(msgspec.json.decode(body))
    except msgspec.DecodeError:
        doc = {}
    message, reason = str(doc.get("message") or ""), str(doc.get("reason") or "")
    details = as_mapping(doc.get("details"))
    if not message:
        message = body.decode(errors="replace").strip()[:300] or f"HTTP {status}"
    text = f"{reason}: {message}" if reason and reason not in message else message
    hint = STATUS_HINTS.get(status, "")
    if status == 404 and details.get("kind") == "namespaces":
        ns = details.get("name") or "?"
        return ClusterError(f"namespace {ns} does not exist", obj=obj, status=status,
                            hint=f"create it (kubectl create namespace {ns}) or choose another with -n / "
                                 "infra.namespace")
    terminating = _TERMINATING.search(message)
    if status == 403 and (terminating or any(isinstance(c, dict) and c.get("reason") == "NamespaceTerminating"
                                             for c in details.get("causes") or [])):
        # the namespace lifecycle admission plugin's answer, not an RBAC denial
        ns = terminating.group(1) if terminating else obj.partition(" ")[2].partition("/")[0] or "?"
        return ClusterError(f"unable to create new content in namespace {ns} because it is being terminated",
                            obj=obj, status=status,
                            hint=f"namespace {ns} is being deleted: wait until `kubectl get namespace {ns}` says "
                                 "NotFound (its finalizers and the objects in it must go first), create it again, "
                                 "then run again; or choose another namespace with -n / infra.namespace")
    fields = crdfields.undeclared_in_message(message) if SCHEMA_REFUSED in message else []
    kind = obj.split(" ")[0]
    if fields and kind in crdfields.KUBERAY_KINDS:
        text, hint = crdfields.explain(kind, fields)
    elif fields:  # a built-in kind, or another operator's: not KubeRay's release history
        text = f"the API server's schema for {kind} has no field {', '.join(fields)}"
        hint = (f"this cluster serves {kind} without it (an older Kubernetes or CRD than the run was checked "
                f"against): `kubectl explain {kind.lower()}` shows what it serves; `dockyard-k8s doctor`")
    elif SCHEMA_REFUSED in message:
        hint = "the cluster's schema for this kind does not accept the object: compare `dockyard-k8s doctor`"
    elif status == 400 and "HTTP request to an HTTPS server" in message:
        hint = ("the kubeconfig's server is http:// or has no scheme (kubectl reads `host:port` as http://, "
                "and sends no credentials over it): write https://HOST:PORT")
    elif status >= 500:
        hint = "the API server failed repeatedly; retry later or check the control plane"
    elif status == 422 and (causes := _causes(details)):
        text = f"{reason or 'Invalid'}: {'; '.join(causes)}"  # not the whole object the message prints
        if all(c.endswith("field is immutable") for c in causes):
            hint = (f"the API server does not change these fields of an existing {kind} (a Job's pod template, "
                    "a StatefulSet's selector...): --replace deletes it and creates it from this spec")
    return ClusterError(text, obj=obj, status=status, hint=hint)


def _causes(details: dict[str, Any]) -> list[str]:
    """A 422's causes as ``field: why``, when its message prints a whole object (an immutable pod
    template is printed in full, thousands of characters): the value left out."""
    causes = [c for c in details.get("causes") or [] if isinstance(c, dict)]
    if sum(len(str(c.get("message") or "")) for c in causes) < 400:
        return []
    out = []
    for c in causes:
        message = str(c.get("message") or "")
        if message.startswith("Invalid value: ") and len(message) > 200:
            message = message.rpartition(": ")[2]
        out.append(f"{c['field']}: {message}" if c.get("field") else message)
    return out


@contextlib.contextmanager
def worded(obj: str) -> Iterator[None]:
    """An error answer of the API server, as a ClusterError naming ``obj``."""
    try:
        yield
    except ApiError as e:  # a watch's in-stream ERROR event: a Status, no response
        raise api_error(e.status.code or 500, msgspec.json.encode(e.status.to_dict()), obj) from e
    except httpx2.HTTPStatusError as e:
        raise api_error(e.response.status_code, e.response.read(), obj) from e
    except msgspec.DecodeError as e:
        raise ClusterError(f"unexpected answer (not JSON): {e}", obj=obj) from e


