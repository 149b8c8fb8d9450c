"""Label and field selectors as the API server parses them (apimachinery ``labels.Parse``,
the per-kind field selector tables of the registry's ``GetAttrs``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fake_api import ApiFailure

# Field selectors each kind supports; everything has the metadata ones.
FIELDS = {
    "Event": {"involvedObject.kind", "involvedObject.name", "involvedObject.namespace", "involvedObject.uid",
              "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
              "reason", "reportingComponent", "type", "source"},
    "Pod": {"spec.nodeName", "status.phase", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
            "status.podIP", "status.nominatedNodeName", "spec.hostNetwork"},
    "Secret": {"type"},
    "Namespace": {"status.phase"},
    "Node": {"spec.unschedulable"},
    "Job": {"status.successful"},
}


def _fail(message: str) -> Exception:
    return ApiFailure(400, "BadRequest", message)


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def parse_label_selector(text: str) -> Callable[[dict[str, str]], bool]:
    """Kubernetes label selector syntax (k8s.io/apimachinery labels.Parse)."""
    reqs: list[Callable[[dict[str, str]], bool]] = []
    for part in _split_top(text or ""):
        words = part.split()
        if len(words) >= 3 and words[1] in ("in", "notin"):
            key, op = words[0], words[1]
            rest = part.split(op, 1)[1].strip()
            if not (rest.startswith("(") and rest.endswith(")")):
                raise _fail(f"unable to parse requirement: {part}")
            values = {v.strip() for v in rest[1:-1].split(",") if v.strip()}
            if op == "in":
                reqs.append(lambda lb, k=key, vs=values: lb.get(k) in vs)
            else:
                reqs.append(lambda lb, k=key, vs=values: lb.get(k) not in vs)
        elif "!=" in part:
            key, value = (s.strip() for s in part.split("!=", 1))
            reqs.append(lambda lb, k=key, v=value: lb.get(k) != v)
        elif "==" in part or "=" in part:
            key, value = (s.strip() for s in part.replace("==", "=", 1).split("=", 1))
            if not key:
                raise _fail(f"unable to parse requirement: {part}")
            reqs.append(lambda lb, k=key, v=value: lb.get(k) == v)
        elif part.startswith("!"):
            absent = part[1:].strip()
            reqs.append(lambda lb, k=absent: k not in lb)
        elif " " not in part:
            reqs.append(lambda lb, k=part: k in lb)
        else:
            raise _fail(f"unable to parse requirement: {part}")
    return lambda labels: all(r(labels) for r in reqs)


def _get_path(obj: dict[str, Any], dotted: str) -> str:
    cur: Any = obj
    for seg in dotted.split("."):
        cur = cur.get(seg) if isinstance(cur, dict) else None
    return "" if cur is None else str(cur)


def parse_field_selector(text: str, kind: str) -> Callable[[dict[str, Any]], bool]:
    allowed = {"metadata.name", "metadata.namespace"} | FIELDS.get(kind, set())
    reqs = []
    for part in _split_top(text or ""):
        neg = "!=" in part
        key, value = (s.strip() for s in (part.split("!=", 1) if neg else part.replace("==", "=", 1).split("=", 1)))
        if key not in allowed:
            raise _fail(f'field label not supported: {key}')
        reqs.append((key, value, neg))
    return lambda obj: all((_get_path(obj, k) != v) if n else (_get_path(obj, k) == v) for k, v, n in reqs)


