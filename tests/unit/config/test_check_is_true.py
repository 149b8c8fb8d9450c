"""`check` ✔ is true: any infra file the schema accepts either renders objects that pass the
strict validator and `plan` against the instance types they declare, or fails with exit 2
naming a key. Never exit 0 with an object the API server or the scheduler would refuse, never
a renderer failure (exit 1) or a traceback."""

from __future__ import annotations

import itertools
import os

import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.infra_schema import INFRA
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.config.schema import QUANTITY, check
from dockyard_k8s.errors import ConfigError
from dockyard_k8s.kube import pod_templates
from dockyard_k8s.plan import catalog, from_pools, plan
from dockyard_k8s.plan.inventory import INSTANCE_TYPE
from dockyard_k8s.validate.engine import validate_report

QUANTITIES = ["0", "1", "500m", "4", "8", "90", "180", "200", "1Gi", "3Gi", "16Gi", "30Gi", "256Gi", "1000Gi",
              "1100Gi", "1800Gi", "4000Gi", 2, 96]
TYPES = ["p4de.24xlarge", "p5.48xlarge", "g5.xlarge", "g6e.12xlarge", "m6i.16xlarge", "workstation-a10-24gb"]
SELECTOR = st.dictionaries(st.sampled_from([INSTANCE_TYPE, "node-role", "team"]),
                           st.sampled_from([*TYPES, "cpu", "gpu"]), max_size=2)


def _value(schema: dict, key: str) -> st.SearchStrategy:
    """A value of ``schema`` (what the schema accepts, biased to the edges that break runs)."""
    nullable = "null" in (schema.get("type") or [])
    if "enum" in schema:
        options = [*schema["enum"], *([None] if nullable else [])]
        return st.sampled_from(options)
    if schema.get("pattern") == QUANTITY:
        return st.sampled_from([*QUANTITIES, *([None] if nullable else [])])
    kind = schema.get("type")
    kind = kind if isinstance(kind, str) else next(t for t in kind if t != "null")
    if kind == "integer":
        low = schema.get("minimum", 0)
        high = schema.get("maximum", 2**31 - 1)
        return st.one_of(st.integers(low, min(low + 9, high)), st.just(high))
    if kind == "boolean":
        return st.booleans()
    if key == "nodeSelector":
        return SELECTOR
    if key == "extendedResources":
        return st.dictionaries(st.just("vpc.amazonaws.com/efa"), st.integers(0, 40), max_size=1)
    if key == "labels":
        return st.dictionaries(st.sampled_from(["team", "example.com/owner"]), st.sampled_from(["rl", "a-b", ""]),
                               max_size=2)
    if key in ("namespace", "name"):
        names = ["team-a", "a" * 40, "a" * 47, "a" * 48, "a" * 53, "a" * 60]
        return st.sampled_from([*names, *([None] if nullable else [])])
    if key == "env":
        return st.dictionaries(st.sampled_from(["NCCL_DEBUG", "HF_HOME"]), st.sampled_from(["INFO", "/x"]), max_size=1)
    return st.nothing()


# The keys whose values decide whether pods fit and objects are accepted.
SIZING = ("replicas", "gpus", "cpu", "memory", "cpuLimit", "memoryLimit", "extendedResources", "shmSize",
          "nodeSelector", "env")
KEYS = [*((("kuberay", g, k) for g, k in itertools.product(("head", "trainer", "inference"), SIZING)
           if not (g == "head" and k == "replicas"))),
        ("launch", "mode"), ("infra", "platform"), ("infra", "instanceType"), ("infra", "labels"),
        ("infra", "imagePull", "prePull"), ("infra", "priorityClass", "create"), ("kuberay", "pdb", "enabled"),
        ("sandbox", "replicas"), ("sandbox", "resources", "cpu"), ("sandbox", "resources", "memory"),
        ("sandbox", "resources", "memoryLimit"), ("sandbox", "nodeSelector"), ("sandbox", "port"),
        ("infra", "namespace"), ("launch", "name"), ("launch", "backoffLimit"), ("launch", "suspend"),
        ("launch", "submissionMode"), ("launch", "shutdownAfterJobFinishes"), ("launch", "activeDeadlineSeconds"),
        ("launch", "ttlSecondsAfterFinished"), ("launch", "preRunningDeadlineSeconds"),
        ("infra", "imagePull", "coldPullSeconds"), ("kuberay", "pdb", "maxUnavailable"),
        ("sandbox", "pdb", "maxUnavailable"), ("infra", "priorityClass", "value"), ("ncclTest", "nodes")]


def _schema_of(path: tuple[str, ...]) -> dict:
    node = INFRA
    for part in path:
        node = node["properties"][part]
    return node


@st.composite
def infra_files(draw: st.DrawFn) -> dict:
    doc: dict = {"infra": {"image": "registry.example.com/team/img:1.0"}, "launch": {}}
    for path in draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=8, unique=True)):
        value = draw(_value(_schema_of(path), path[-1]))
        node = doc
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    if doc.get("launch", {}).get("mode") == "attach":  # its target (read only in attach mode)
        doc["launch"]["attach"] = {"cluster": "c"}
    return doc


def _declared_types_fit(objects: list[dict], infra: dict) -> list[str]:
    """Every pod that declares an instance type is placed by `plan` on nodes of that type."""
    pools: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
    total = 0
    for obj in objects:
        for t in pod_templates(obj):
            selector = t.spec.get("nodeSelector") or {}
            total += t.replicas or 0
            if t.replicas and selector.get(INSTANCE_TYPE) in (*catalog.AWS, *catalog.EXPLICIT):
                pools[(selector[INSTANCE_TYPE], tuple(sorted(selector.items())))] = 0
    if not pools or total > 200:  # (2**31 - 1 replicas are valid; how many nodes that takes is plan's question)
        return []
    # For each declared type (with the other labels its pods select: nodes may carry any), a node
    # for every pod of the run (pods that declare no type may land on them too).
    inventory = from_pools({"nodePools": [{"name": f"pool{i}", "instanceType": t, "count": total,
                                           "labels": {k: v for k, v in labels if k != INSTANCE_TYPE}}
                                          for i, (t, labels) in enumerate(sorted(pools))]})
    result = plan(objects, inventory)
    declared = {t for t, _ in pools}
    return [f"{g.group.name}: {g.reasons}" for g in result.groups
            if g.pending and (g.group.spec.get("nodeSelector") or {}).get(INSTANCE_TYPE) in declared]


@settings(max_examples=int(os.environ.get("DOCKYARD_CHECK_EXAMPLES", "120")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=infra_files())
def test_an_accepted_infra_file_runs_or_is_refused_at_a_key(tmp_path, doc):
    if check(INFRA, doc):
        event("refused by the schema")
        return  # the loader reports it at the key (other tests)
    recipe = tmp_path / "r.yaml"
    recipe.write_text("model: m\nenv:\n  code:\n    sandbox_urls: [http://localhost:9090]\n")
    infra = tmp_path / "i.infra.yaml"
    infra.write_text(yaml.safe_dump(doc))
    try:
        bundle = build_bundle(str(recipe), str(infra), Layers(env={"HOME": str(tmp_path)}))
    except ConfigError as e:  # exit 2: each problem names a key (and where it was written)
        assert e.problems
        assert all(p.path for p in e.problems), e.render()
        event("refused at a key")
        return
    event("rendered")
    objects = bundle.objects
    assert validate_report(objects).problems == []  # strict: CRDs too, nothing unknown
    assert _declared_types_fit(objects, bundle.run.infra) == []
