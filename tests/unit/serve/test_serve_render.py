"""What the endpoint renders: apply order, the Deployment, backends, KEDA, strict validation."""

from __future__ import annotations

from pathlib import Path

import pytest
from serve_support import bundle, env_of, find, server

from dockyard_k8s.config.layering import Layers
from dockyard_k8s.errors import ManifestError
from dockyard_k8s.render.serve import render_serve
from dockyard_k8s.serve_bundle import build_serve_bundle

APPLY_ORDER = ["PriorityClass", "NetworkPolicy", "NetworkPolicy", "PersistentVolumeClaim", "Deployment", "Service",
               "PodDisruptionBudget", "PodMonitor", "ScaledObject"]
SCALED = {"autoscaling": {"enabled": True, "maxReplicas": 3}, "cache": {"accessMode": "ReadWriteMany"},
          "network": {"ingress": [{"namespace": "monitoring"}]}, "priorityClass": {"create": True}}


def test_everything_on_renders_in_apply_order(tmp_path: Path) -> None:
    objects = bundle(tmp_path, SCALED).objects
    assert [o["kind"] for o in objects] == APPLY_ORDER
    names = [o["metadata"]["name"] for o in objects]
    assert names == ["gpu-inference", "llama-default-deny", "llama-allow", "llama-cache", "llama", "llama", "llama",
                     "llama", "llama"]


def test_every_object_carries_the_endpoint_label_and_never_a_run_label(tmp_path: Path) -> None:
    for obj in bundle(tmp_path, SCALED).objects:
        labels = obj["metadata"]["labels"]
        assert labels["dockyard-k8s/endpoint"] == "llama" and "dockyard-k8s/run" not in labels
    template = find(bundle(tmp_path).objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert template["dockyard-k8s/fleet"] == "serve"


def test_optional_objects_go_away(tmp_path: Path) -> None:
    kinds = [o["kind"] for o in bundle(tmp_path, {"network": {"defaultDeny": False}, "pdb": {"enabled": False},
                                                  "cache": {"create": False, "claimName": "mine"}}).objects]
    assert kinds == ["Deployment", "Service"]


def test_the_deployment_of_the_single_gpu_example(tmp_path: Path) -> None:
    objects = bundle(tmp_path, {"model": {"id": "meta-llama/Meta-Llama-3-8B-Instruct",
                                          "hubTokenSecret": {"name": "hf-token"}}},
                     infra={"namespace": "llama", "platform": "kind"}).objects
    dep = find(objects, "Deployment")
    pod = dep["spec"]["template"]["spec"]
    c = server(objects)
    assert dep["spec"]["replicas"] == 1
    assert dep["spec"]["strategy"] == {"type": "Recreate"}  # one GPU: the old pod goes first
    assert pod["runtimeClassName"] == "nvidia" and pod["priorityClassName"] == "gpu-inference"
    assert pod["automountServiceAccountToken"] is False
    assert c["resources"] == {"requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
                              "limits": {"memory": "32Gi", "nvidia.com/gpu": "1"}}
    assert env_of(c)["HF_HOME"] == "/root/.cache/huggingface"
    assert env_of(c)["HF_TOKEN"] == {"secretKeyRef": {"name": "hf-token", "key": "token"}}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert c[probe]["httpGet"] == {"path": "/health", "port": "http"}
    assert c["startupProbe"]["failureThreshold"] * c["startupProbe"]["periodSeconds"] == 1800
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    assert mounts == {"/dev/shm": "dshm", "/root/.cache/huggingface": "model-cache"}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["dshm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "8Gi"}
    assert volumes["model-cache"]["persistentVolumeClaim"] == {"claimName": "llama-cache"}
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    pvc = find(objects, "PersistentVolumeClaim")
    assert pvc["spec"]["storageClassName"] == "standard" and pvc["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert pvc["metadata"]["annotations"]["dockyard-k8s/keep-on-down"] == "true"


def test_without_gpus_no_runtime_class_and_no_gpu_resources(tmp_path: Path) -> None:
    objects = bundle(tmp_path, {"gpus": 0}, infra={"namespace": "llama", "platform": "kind"}).objects
    pod = find(objects, "Deployment")["spec"]["template"]["spec"]
    assert "runtimeClassName" not in pod
    assert "nvidia.com/gpu" not in server(objects)["resources"]["requests"]


@pytest.mark.parametrize(("backend", "expected"), [
    ("vllm", ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "org/m", "--served-model-name",
              "chat", "--host", "0.0.0.0", "--port", "8000", "--tensor-parallel-size", "2", "--max-model-len", "4096",
              "--dtype", "bfloat16", "--gpu-memory-utilization", "0.85", "--revision", "abc123",
              "--enable-prefix-caching"]),
    ("sglang", ["python3", "-m", "sglang.launch_server", "--model-path", "org/m", "--served-model-name", "chat",
                "--host", "0.0.0.0", "--port", "30000", "--tp-size", "2", "--context-length", "4096", "--dtype",
                "bfloat16", "--mem-fraction-static", "0.85", "--revision", "abc123", "--enable-metrics",
                "--enable-prefix-caching"]),
])
def test_backends_map_the_launch_arguments_to_their_flags(tmp_path: Path, backend: str, expected: list[str]) -> None:
    c = server(bundle(tmp_path, {"backend": backend, "gpus": 2,
                                 "model": {"id": "org/m", "revision": "abc123", "servedName": "chat"},
                                 "engine": {"maxModelLen": 4096, "dtype": "bfloat16", "gpuMemoryUtilization": 0.85,
                                            "extraArgs": ["--enable-prefix-caching"]}}).objects)
    assert [*c["command"], *c["args"]] == expected
    assert c["ports"] == [{"name": "http", "containerPort": 8000 if backend == "vllm" else 30000, "protocol": "TCP"}]


def test_a_checkpoint_is_mounted_read_only_and_served_offline(tmp_path: Path) -> None:
    storage = {"enabled": True, "claimName": "fsx-claim", "mountPath": "/fsx", "accessMode": "ReadWriteMany"}
    objects = bundle(tmp_path, {"model": {"path": "/fsx/ckpt/step-400"}}, infra={"namespace": "rl", "storage": storage}
                     ).objects
    c = server(objects)
    pod = find(objects, "Deployment")["spec"]["template"]["spec"]
    assert c["args"][:2] == ["--model", "/fsx/ckpt/step-400"]
    assert {"name": "model", "mountPath": "/fsx", "readOnly": True} in c["volumeMounts"]
    assert {"name": "model", "persistentVolumeClaim": {"claimName": "fsx-claim", "readOnly": True}} in pod["volumes"]
    assert env_of(c)["HF_HUB_OFFLINE"] == "1" and "HF_HOME" not in env_of(c)
    assert "PersistentVolumeClaim" not in [o["kind"] for o in objects]


def test_a_per_replica_cache_is_a_generic_ephemeral_volume(tmp_path: Path) -> None:
    objects = bundle(tmp_path, {"replicas": 3, "cache": {"perReplica": True, "storageClass": "gp3"},
                                "rollout": {"maxSurge": 0}}).objects
    pod = find(objects, "Deployment")["spec"]["template"]["spec"]
    (cache,) = [v for v in pod["volumes"] if v["name"] == "model-cache"]
    spec = cache["ephemeral"]["volumeClaimTemplate"]["spec"]
    assert spec == {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "100Gi"}},
                    "storageClassName": "gp3"}
    assert "PersistentVolumeClaim" not in [o["kind"] for o in objects]
    assert find(objects, "Deployment")["spec"]["strategy"] == {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}


def test_autoscaling_leaves_replicas_to_keda(tmp_path: Path) -> None:
    objects = bundle(tmp_path, {**SCALED, "autoscaling": {"enabled": True, "minReplicas": 2, "maxReplicas": 5,
                                                          "threshold": 2.5, "authenticationRef": "prom-auth"}}).objects
    dep = find(objects, "Deployment")
    assert "replicas" not in dep["spec"]  # the HPA owns it; applying a count would fight KEDA
    assert dep["spec"]["strategy"]["type"] == "RollingUpdate"
    so = find(objects, "ScaledObject")
    assert so["apiVersion"] == "keda.sh/v1alpha1"
    assert so["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "llama"}
    assert (so["spec"]["minReplicaCount"], so["spec"]["maxReplicaCount"]) == (2, 5)
    (trigger,) = so["spec"]["triggers"]
    assert trigger == {"type": "prometheus", "authenticationRef": {"name": "prom-auth"}, "metadata": {
        "serverAddress": "http://prometheus-operated.monitoring.svc:9090",
        "query": 'sum(vllm:num_requests_waiting{namespace="llama",model_name="meta-llama/Meta-Llama-3-8B-Instruct"})',
        "threshold": "2.5", "ignoreNullValues": "false"}}


def test_the_rollout_deadline_covers_startup_and_a_cold_pull(tmp_path: Path) -> None:
    dep = find(bundle(tmp_path, {"probes": {"startupSeconds": 1200}}, infra={"namespace": "x", "platform": "eks"}
                      ).objects, "Deployment")
    assert dep["spec"]["progressDeadlineSeconds"] == 1200 + 600 + 600


def test_the_bundle_validates_the_scaled_object_against_the_bundled_keda_crd(tmp_path: Path) -> None:
    b = bundle(tmp_path, SCALED)
    assert b.validation.sources["keda.sh/v1alpha1/ScaledObject"] == "KEDA v2.20.2 CRD (bundled)"
    assert not b.validation.missing


def test_a_renderer_bug_never_leaves_the_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail closed: a ScaledObject field KEDA does not know stops `serve render` (exit 1)."""
    from dockyard_k8s import serve_bundle

    def broken(cfg):  # type: ignore[no-untyped-def]
        objects = render_serve(cfg)
        objects[-1]["spec"]["maxReplicas"] = 3  # KEDA spells it maxReplicaCount
        return objects

    monkeypatch.setattr(serve_bundle, "render_serve", broken)
    spec = tmp_path / "s.serve.yaml"
    spec.write_text("serve:\n  model: {id: a/b}\n  autoscaling: {enabled: true}\n  cache: {accessMode: ReadWriteMany}\n"
                    "  network: {ingress: [{namespace: monitoring}]}\n")
    with pytest.raises(ManifestError) as info:
        build_serve_bundle(str(spec), Layers(env={}))
    assert 'unknown field "maxReplicas"' in info.value.render()
    assert info.value.exit_code == 1


def test_rendering_is_deterministic(tmp_path: Path) -> None:
    assert bundle(tmp_path, SCALED).objects == bundle(tmp_path, SCALED).objects


def test_scale_in_waits_for_the_hpas_scale_down_stabilization_not_cooldown(tmp_path: Path) -> None:
    """KEDA's cooldownPeriod only delays scaling to zero (never done here); from
    1 to N the HPA scales, and its scale-down stabilization window is the scale-in delay."""
    so = find(bundle(tmp_path, SCALED).objects, "ScaledObject")["spec"]
    assert "cooldownPeriod" not in so
    assert so["advanced"] == {"horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {
        "stabilizationWindowSeconds": 300}}}}
    scaled = {**SCALED, "autoscaling": {**SCALED["autoscaling"], "scaleDownStabilizationSeconds": 900}}
    so = find(bundle(tmp_path, scaled).objects, "ScaledObject")["spec"]
    assert so["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"] == {
        "stabilizationWindowSeconds": 900}


def test_prometheus_operator_scrapes_a_pod_monitor_not_annotations(tmp_path: Path) -> None:
    """The default Prometheus (prometheus-operated, kube-prometheus-stack) is
    prometheus-operator's, which ignores prometheus.io/* annotations: a PodMonitor it selects
    makes the queue gauge exist at all."""
    objects = bundle(tmp_path, SCALED).objects
    assert [o["kind"] for o in objects][-3:] == ["PodDisruptionBudget", "PodMonitor", "ScaledObject"]
    pm = find(objects, "PodMonitor")
    dep = find(objects, "Deployment")
    assert pm["apiVersion"] == "monitoring.coreos.com/v1"
    assert pm["metadata"]["labels"]["release"] == "kube-prometheus-stack"  # the chart's default podMonitorSelector
    assert pm["spec"] == {"selector": {"matchLabels": dep["spec"]["selector"]["matchLabels"]},
                          "podMetricsEndpoints": [{"port": "http", "path": "/metrics"}]}
    assert "annotations" not in dep["spec"]["template"]["metadata"]  # one scrape mechanism, never both
    mine = {**SCALED, "metrics": {"podMonitorLabels": {"release": "monitoring"}}}
    assert find(bundle(tmp_path, mine).objects, "PodMonitor")["metadata"]["labels"]["release"] == "monitoring"


@pytest.mark.parametrize(("metrics", "address", "monitor"), [
    ({}, "http://prometheus-server.monitoring.svc:80", False),  # the prometheus chart: annotation-based discovery
    ({}, "http://kube-prometheus-stack-prometheus.monitoring.svc:9090", True),
    ({}, "http://prom-kube-prom-prometheus.monitoring:9090", True),
    ({"scrape": "annotations"}, "http://prometheus-operated.monitoring.svc:9090", False),
    ({"scrape": "podMonitor"}, "http://prometheus-server.monitoring.svc:80", True),
])
def test_the_scrape_mechanism_follows_the_address_unless_chosen(tmp_path: Path, metrics: dict, address: str,
                                                                monitor: bool) -> None:
    spec = {**SCALED, "metrics": metrics, "autoscaling": {**SCALED["autoscaling"], "prometheusAddress": address}}
    objects = bundle(tmp_path, spec).objects
    template = find(objects, "Deployment")["spec"]["template"]["metadata"]
    assert ("PodMonitor" in [o["kind"] for o in objects]) is monitor
    assert ("annotations" in template) is not monitor
    if not monitor:
        assert template["annotations"] == {"prometheus.io/scrape": "true", "prometheus.io/port": "8000",
                                           "prometheus.io/path": "/metrics"}


def test_a_lost_metric_is_an_error_that_falls_back_never_a_zero(tmp_path: Path) -> None:
    """KEDA's Prometheus scaler reads an empty result as 0 unless ignoreNullValues is false; then
    it is an error, and after failureThreshold errors the fallback holds the replicas."""
    so = find(bundle(tmp_path, SCALED).objects, "ScaledObject")["spec"]
    (trigger,) = so["triggers"]
    assert trigger["metadata"]["ignoreNullValues"] == "false"
    assert so["fallback"] == {"failureThreshold": 3, "replicas": 1, "behavior": "currentReplicasIfHigher"}
    spec = {**SCALED, "autoscaling": {**SCALED["autoscaling"], "minReplicas": 2,
                                      "fallback": {"failureThreshold": 5, "replicas": 3, "behavior": "static"}}}
    so = find(bundle(tmp_path, spec).objects, "ScaledObject")["spec"]
    assert so["fallback"] == {"failureThreshold": 5, "replicas": 3, "behavior": "static"}


def test_the_pod_monitor_validates_against_the_bundled_prometheus_operator_crd(tmp_path: Path) -> None:
    b = bundle(tmp_path, SCALED)
    assert b.validation.sources["monitoring.coreos.com/v1/PodMonitor"] == "prometheus-operator v0.93.0 CRD (bundled)"
    assert not b.validation.missing


def test_replicas_spread_across_nodes_when_there_are_several(tmp_path: Path) -> None:
    """GPU replicas stacked on one node fall together (a drain, a bad GPU)."""
    pod = find(bundle(tmp_path, SCALED).objects, "Deployment")["spec"]["template"]["spec"]
    assert pod["topologySpreadConstraints"] == [{
        "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"dockyard-k8s/endpoint": "llama", "dockyard-k8s/fleet": "serve"}},
        "matchLabelKeys": ["pod-template-hash"]}]  # each revision spreads on its own during a rollout
    assert "topologySpreadConstraints" not in find(bundle(tmp_path).objects, "Deployment")["spec"]["template"]["spec"]
    none = {**SCALED, "topologySpreadConstraints": []}
    assert "topologySpreadConstraints" not in find(bundle(tmp_path, none).objects, "Deployment")["spec"]["template"][
        "spec"]
    zones = {**SCALED, "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                                      "whenUnsatisfiable": "DoNotSchedule"}]}
    (tsc,) = find(bundle(tmp_path, zones).objects, "Deployment")["spec"]["template"]["spec"][
        "topologySpreadConstraints"]
    assert tsc["labelSelector"] == {"matchLabels": {"dockyard-k8s/endpoint": "llama", "dockyard-k8s/fleet": "serve"}}


@pytest.mark.parametrize("backend", ["vllm", "sglang"])
def test_an_api_key_comes_from_its_secret_and_sglangs_admin_endpoints_get_their_own(tmp_path: Path,
                                                                                   backend: str) -> None:
    """The key is a reference (Kubernetes expands $(VAR) in args from the
    container's env); SGLang's --api-key alone would also unlock its admin endpoints."""
    c = server(bundle(tmp_path, {"backend": backend, "apiKeySecret": {"name": "llama-keys"}}).objects)
    env = env_of(c)
    assert env["DOCKYARD_API_KEY"] == {"secretKeyRef": {"name": "llama-keys", "key": "api-key"}}
    args = c["args"]
    assert args[args.index("--api-key") + 1] == "$(DOCKYARD_API_KEY)"
    if backend == "sglang":
        assert env["DOCKYARD_ADMIN_API_KEY"] == {"secretKeyRef": {"name": "llama-keys", "key": "admin-api-key"}}
        assert args[args.index("--admin-api-key") + 1] == "$(DOCKYARD_ADMIN_API_KEY)"
    else:
        assert "--admin-api-key" not in args and "DOCKYARD_ADMIN_API_KEY" not in env
    plain = server(bundle(tmp_path, {"backend": backend}).objects)
    assert "--api-key" not in plain["args"] and "DOCKYARD_API_KEY" not in env_of(plain)
