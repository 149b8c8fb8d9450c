"""Rules across the objects of one input: a Service must select pods the input defines.

A Service whose selector matches no pod template among the objects, when the objects do
contain pod templates in its namespace (a Service for pods made elsewhere is not judged), and
a named ``targetPort`` that no selected container declares, are what ``kubectl apply``
accepts and a user finds out only when no traffic arrives.

Each object gives its :func:`facts_of` (small, picklable: a worker validating part of a large
input sends facts, not objects); :class:`CrossObjects` indexes them and judges the Services.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from dockyard_k8s.kube import PodTemplate, as_mapping, containers, pod_templates, selector_matches
from dockyard_k8s.names import show_labels
from dockyard_k8s.plain import show
from dockyard_k8s.validate.problem import JsonPath

# What the cross-object rules need of one object:
#   ("pods", namespace, [(labels, declared container port names), ...])   a workload
#   ("service", namespace, selector, [(port index, named targetPort), ...])  a Service
CrossFacts = tuple[Any, ...]


def facts_of(obj: dict[str, Any], templates: list[PodTemplate] | None = None) -> CrossFacts | None:
    """What :class:`CrossObjects` needs to know of ``obj``; None when it plays no part."""
    ns = str(as_mapping(obj.get("metadata")).get("namespace") or "")
    if obj.get("kind") == "Service":
        spec = as_mapping(obj.get("spec"))
        selector = spec.get("selector")
        if selector.__class__ is not dict or not selector:
            return None
        ports = spec.get("ports")
        ports = ports if isinstance(ports, list) else []
        targets = [(i, as_mapping(port).get("targetPort")) for i, port in enumerate(ports)]
        return ("service", ns, selector, [(i, t) for i, t in targets if t.__class__ is str])
    found = [(as_mapping(t.metadata.get("labels")), _port_names(t.spec))
             for t in (pod_templates(obj) if templates is None else templates)]
    return ("pods", ns, found) if found else None


def _port_names(spec: dict[str, Any]) -> set[str]:
    """Names of the container ports of a pod spec (the cross-object rules match targetPorts)."""
    return {p["name"] for _, c in containers(spec) if isinstance(ports := c.get("ports"), list)
            for p in ports if isinstance(p, dict) and isinstance(p.get("name"), str)}


class CrossObjects:
    """The cross-object rules (the module doc says which).

    Facts go in with :meth:`add` (each Service with an opaque ``who`` to report it by), several
    parts' indexes combine with :meth:`merge` (plain data: a worker process sends its index),
    and :meth:`problems` judges the Services. Pod templates are indexed by (namespace, label,
    value), so a Service looks only at the templates sharing the first pair of its selector:
    linear, not Services x templates. A part may :meth:`settle` the Services its own templates
    already satisfy before sending its index: more templates only add matches and ports.
    """

    def __init__(self) -> None:
        self.services: list[tuple[Any, int, str, dict[str, Any], list[tuple[int, str]]]] = []
        self.by_pair: dict[tuple[str, str, str], list[tuple[dict[str, Any], set[str]]]] = {}
        self.namespaces: set[str] = set()

    def add(self, who: Any, fact: CrossFacts) -> None:
        if fact[0] == "service":
            _, ns, selector, targets = fact
            self.services.append((who, 0, ns, selector, targets))
            return
        _, ns, templates = fact
        self.namespaces.add(ns)
        for labels, ports in templates:
            for key, value in labels.items():
                if value.__class__ is str:
                    self.by_pair.setdefault((ns, key, value), []).append((labels, ports))

    def merge(self, other: CrossObjects, shift: Callable[[Any], int] | None = None) -> None:
        """Add another part's index; ``shift(who)`` is added to its Services' shifts."""
        if shift is None:
            self.services += other.services
        else:
            self.services += [(who, n + shift(who), ns, sel, targets) for who, n, ns, sel, targets in other.services]
        self.namespaces |= other.namespaces
        for pair, templates in other.by_pair.items():
            self.by_pair.setdefault(pair, []).extend(templates)

    def relabel(self, name: Callable[[Any], Any]) -> None:
        """Replace each Service's ``who`` by ``name(who)`` (a part's local index by the object's identity)."""
        self.services = [(name(who), n, ns, sel, targets) for who, n, ns, sel, targets in self.services]

    def settle(self) -> None:
        """Drop the Services these facts already satisfy (templates in their namespace select
        them and declare every named targetPort): whatever other parts add, they stay fine."""
        if self.services and self.namespaces:
            self.services = [s for s in self.services if s[2] not in self.namespaces or any(self._judge([s]))]

    def problems(self) -> Iterator[tuple[Any, int, JsonPath, str]]:
        """(who, shift, path, message) for every Service that breaks a rule, in order."""
        return self._judge(self.services)

    def _judge(self, services: list[tuple[Any, int, str, dict[str, Any], list[tuple[int, str]]]]
               ) -> Iterator[tuple[Any, int, JsonPath, str]]:
        namespaces, by_pair = self.namespaces, self.by_pair
        if not namespaces:
            return
        for who, shift, ns, selector, targets in services:
            if ns not in namespaces:
                continue
            key, value = next(iter(selector.items()))
            candidates = by_pair.get((ns, key, value), ()) if value.__class__ is str else ()
            if len(selector) == 1:  # the index matched its only pair already
                matched = [ports for _, ports in candidates] if targets else candidates
            else:
                matched = [ports for labels, ports in candidates
                           if selector_matches({"matchLabels": selector}, labels)]
            if not matched:
                yield who, shift, ("spec", "selector"), (f"selects no pod: no pod template in namespace "
                                                         f"{ns or '(unset)'} has the labels {show_labels(selector)}")
                continue
            if not targets:  # no named targetPort: nothing more to check (most Services)
                continue
            declared = matched[0] if len(matched) == 1 else set().union(*matched)
            for i, target in targets:
                if target not in declared:
                    yield who, shift, ("spec", "ports", i, "targetPort"), \
                        f"no container of the selected pods declares a port named {show(target)}"
