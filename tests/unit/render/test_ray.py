import json

import pytest

from dockyard_k8s.kube import pod_templates
from dockyard_k8s.kube import selector_matches as selects
from dockyard_k8s.render.meta import FLEET_LABEL, RUN_LABEL
from dockyard_k8s.render.ray import resources_param


def cluster_spec(objs, kind="RayJob"):
    obj = objs[kind, "exp"]
    return obj["spec"]["rayClusterSpec"] if kind == "RayJob" else obj["spec"]


def group(spec, name):
    return next(g for g in spec["workerGroupSpecs"] if g["groupName"] == name)


def env_of(container):
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def fleet_tag(group_spec):
    """The fleet resources as KubeRay reads them (getResourcesMap: quotes trimmed, then JSON)."""
    raw = group_spec["rayStartParams"]["resources"]
    assert raw.startswith("'") and raw.endswith("'")
    return json.loads(raw.strip("'\"` "))


def test_worker_groups_carry_fleet_tags_and_roles(render):
    objs, _ = render()
    spec = cluster_spec(objs)
    assert [g["groupName"] for g in spec["workerGroupSpecs"]] == ["trainer", "inference"]
    for role in ("trainer", "inference"):
        g = group(spec, role)
        assert fleet_tag(g) == {f"dockyard_fleet_{role}": 8}
        assert env_of(g["template"]["spec"]["containers"][0])["DOCKYARD_FLEET_ROLE"] == role
        assert (g["replicas"], g["minReplicas"], g["maxReplicas"]) == (1, 1, 1)


def test_runtime_invariants_on_every_gpu_pod(render):
    objs, _ = render()
    templates = [t for t in pod_templates(objs["RayJob", "exp"]) if t.group != "submitter"]
    assert [t.group for t in templates] == ["head", "trainer", "inference"]
    for t in templates:
        c = t.spec["containers"][0]
        env = env_of(c)
        assert env["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] == "0"
        assert env["DOCKYARD_SANDBOX_URLS"] == "http://exp-sandbox.team.svc.cluster.local:9090"
        assert c["image"] == "reg.example.com/ubuntu-swe:vllm-1.0"
        assert t.spec["imagePullSecrets"] == [{"name": "pull"}]
        assert t.spec["priorityClassName"] == "gpu-high"
        assert t.metadata["labels"][RUN_LABEL] == "exp"
        assert t.metadata["labels"][FLEET_LABEL] == t.group


def test_gpu_sizing_requests_equal_limits_and_shm(render):
    objs, _ = render("kuberay:\n  trainer:\n    gpus: 4\n    cpu: 40\n    memory: 400Gi\n    memoryLimit: 450Gi\n"
                     "    extendedResources: {vpc.amazonaws.com/efa: 4}\n    shmSize: 128Gi\n")
    t = group(cluster_spec(objs), "trainer")["template"]["spec"]
    res = t["containers"][0]["resources"]
    assert res["requests"] == {"cpu": "40", "memory": "400Gi", "nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "4"}
    assert res["limits"] == {"cpu": "40", "memory": "450Gi", "nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "4"}
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "128Gi"}} in t["volumes"]
    assert t["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_head_has_no_gpu_and_serves_dashboard(render):
    objs, _ = render()
    head = cluster_spec(objs)["headGroupSpec"]
    c = head["template"]["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in c["resources"]["requests"]
    assert [p["containerPort"] for p in c["ports"]] == [6379, 8265, 10001]
    assert head["rayStartParams"] == {"dashboard-host": "0.0.0.0"}
    assert "tolerations" not in head["template"]["spec"]


def test_recipe_is_mounted_and_rendered_resolved(render):
    objs, _ = render(overrides=["model=other"])
    cm = objs["ConfigMap", "exp-recipe"]
    assert cm["data"]["recipe.yaml"] == "model: other\nenv:\n  code:\n    sandbox_urls: null\n"
    t = group(cluster_spec(objs), "trainer")["template"]["spec"]
    assert {"name": "recipe", "configMap": {"name": "exp-recipe"}} in t["volumes"]
    assert {"name": "recipe", "mountPath": "/etc/dockyard-k8s", "readOnly": True} in t["containers"][0]["volumeMounts"]
    assert objs["RayJob", "exp"]["spec"]["entrypoint"] == (
        "python -m dockyard_rl.train --config /etc/dockyard-k8s/recipe.yaml ++model=other "
        "++env.code.sandbox_urls=null")


def test_free_form_spec_merges_by_group_and_name_and_invariants_win(render):
    objs, _ = render("""\
kuberay:
  extraGroups: [cpu-rollout]
  spec:
    enableInTreeAutoscaling: false
    workerGroupSpecs:
      - groupName: trainer
        rayStartParams: {resources: '"{\\"extra\\": 2}"'}
        template:
          metadata: {labels: {dockyard-k8s/run: hijack, team: a}}
          spec:
            priorityClassName: trainer-top
            containers:
              - name: ray-worker
                image: someone/else:latest
                env:
                  - {name: RAY_ENABLE_UV_RUN_RUNTIME_ENV, value: "1"}
                  - {name: WANDB_API_KEY, valueFrom: {secretKeyRef: {name: w, key: k}}}
              - name: sidecar
                image: busybox:1.36
      - groupName: cpu-rollout
        replicas: 2
        minReplicas: 2
        maxReplicas: 2
        template:
          spec:
            containers: [{name: ray-worker, image: x}]
""")
    spec = cluster_spec(objs)
    assert spec["enableInTreeAutoscaling"] is False
    trainer = group(spec, "trainer")
    pod = trainer["template"]["spec"]
    assert pod["priorityClassName"] == "trainer-top"  # a fleet may override its own
    main, sidecar = pod["containers"]
    assert main["image"] == "reg.example.com/ubuntu-swe:vllm-1.0"  # invariant
    assert env_of(main)["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] == "0"  # invariant
    assert env_of(main)["WANDB_API_KEY"] == {"secretKeyRef": {"name": "w", "key": "k"}}
    assert main["resources"]["requests"]["nvidia.com/gpu"] == "8"  # merged, not replaced
    assert sidecar["image"] == "busybox:1.36" and env_of(sidecar)["DOCKYARD_FLEET_ROLE"] == "trainer"
    assert trainer["template"]["metadata"]["labels"][RUN_LABEL] == "exp"
    assert trainer["template"]["metadata"]["labels"]["team"] == "a"
    assert fleet_tag(trainer) == {"dockyard_fleet_trainer": 8, "extra": 2}
    extra = group(spec, "cpu-rollout")
    assert extra["template"]["metadata"]["labels"][FLEET_LABEL] == "cpu-rollout"
    assert extra["template"]["spec"]["containers"][0]["image"] == "reg.example.com/ubuntu-swe:vllm-1.0"


def test_gpu_security_is_opt_in(render):
    objs, _ = render()
    assert "securityContext" not in group(cluster_spec(objs), "trainer")["template"]["spec"]["containers"][0]
    objs, _ = render(infra="security:\n  enabled: true\n  runAsNonRoot: true")
    ctx = group(cluster_spec(objs), "trainer")["template"]["spec"]["containers"][0]["securityContext"]
    assert ctx["allowPrivilegeEscalation"] is False and ctx["runAsNonRoot"] is True


def test_rayjob_fields(render):
    objs, _ = render("launch:\n  activeDeadlineSeconds: 4200\n  preRunningDeadlineSeconds: 900\n"
                     "  runtimeEnv: {env_vars: {A: '1'}}\n  submitter: {image: rayproject/ray:2.49.0}\n")
    spec = objs["RayJob", "exp"]["spec"]
    assert spec["activeDeadlineSeconds"] == 4200 and spec["preRunningDeadlineSeconds"] == 900
    assert spec["shutdownAfterJobFinishes"] is True and spec["ttlSecondsAfterFinished"] == 600
    assert spec["runtimeEnvYAML"] == "env_vars:\n  A: '1'\n"
    sub = spec["submitterPodTemplate"]
    assert sub["spec"]["restartPolicy"] == "Never" and sub["spec"]["priorityClassName"] == "gpu-high"
    assert sub["spec"]["containers"][0]["image"] == "rayproject/ray:2.49.0"
    assert "command" not in sub["spec"]["containers"][0]  # KubeRay fills in `ray job submit`
    assert sub["metadata"]["labels"][FLEET_LABEL] == "submitter"


def test_sidecar_mode_has_no_submitter_template(render):
    objs, _ = render("launch:\n  submissionMode: SidecarMode\n")
    assert "submitterPodTemplate" not in objs["RayJob", "exp"]["spec"]


def test_deletion_rules_need_shutdown_off(render):
    objs, _ = render("launch:\n  shutdownAfterJobFinishes: false\n  deletionRules:\n"
                     "    - {policy: DeleteCluster, condition: {jobStatus: SUCCEEDED, ttlSeconds: 60}}\n")
    spec = objs["RayJob", "exp"]["spec"]
    assert spec["deletionStrategy"]["deletionRules"][0]["policy"] == "DeleteCluster"
    assert "ttlSecondsAfterFinished" not in spec


@pytest.mark.parametrize(
    ("mode", "last"),
    [("rayjob", ("RayJob", "exp")), ("bringup", ("RayCluster", "exp")), ("attach", ("ConfigMap", "exp-recipe"))],
)
def test_launch_modes(render, mode, last):
    extra = "launch:\n  mode: " + mode + ("\n  attach: {cluster: shared}\n" if mode == "attach" else "\n")
    _, objects = render(extra)
    assert (objects[-1]["kind"], objects[-1]["metadata"]["name"]) == last


def test_gpu_pdb_opt_in_selects_gpu_pods_only(render):
    objs, objects = render("launch:\n  mode: bringup\nkuberay:\n  pdb:\n    enabled: true\n",
                           infra="imagePull: {prePull: true}")
    pdb = objs["PodDisruptionBudget", "exp-gpu"]["spec"]
    assert pdb["maxUnavailable"] == 0
    assert pdb["selector"] == {"matchLabels": {RUN_LABEL: "exp"}, "matchExpressions": [
        {"key": FLEET_LABEL, "operator": "In", "values": ["head", "trainer", "inference"]}]}
    assert [o["kind"] for o in objects][-2:] == ["PodDisruptionBudget", "RayCluster"]
    selected = {t.metadata["labels"][FLEET_LABEL] for o in objects for t in pod_templates(o)
                if selects(pdb["selector"], t.metadata["labels"])}
    assert selected == {"head", "trainer", "inference"}  # not the sandbox, the submitter or the pre-pull pods


def test_governance_objects_come_first(render):
    _, objects = render(infra="resourceQuota:\n  hard: {requests.nvidia.com/gpu: 16}\n"
                               "limitRange:\n  limits: [{type: Container, default: {cpu: '1'}}]")
    assert [o["kind"] for o in objects[:2]] == ["ResourceQuota", "LimitRange"]
    assert objects[0]["spec"] == {"hard": {"requests.nvidia.com/gpu": "16"}}


def test_every_object_is_labelled(render):
    _, objects = render(infra="labels: {cost-center: rl}")
    for o in objects:
        labels = o["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "dockyard-k8s"
        assert labels["app.kubernetes.io/instance"] == "exp"
        assert labels["app.kubernetes.io/name"] == "dockyard-k8s"
        assert labels["app.kubernetes.io/component"]
        assert labels[RUN_LABEL] == "exp"
        assert labels["cost-center"] == "rl"
        assert "ray.io/scheduler-name" not in json.dumps(o)


@pytest.mark.parametrize(
    ("existing", "expected"),
    [(None, {"dockyard_fleet_trainer": 8}), ('"{\\"a\\": 1}"', {"a": 1, "dockyard_fleet_trainer": 8}),
     ('{"a": 1}', {"a": 1, "dockyard_fleet_trainer": 8}), ("garbage", {"dockyard_fleet_trainer": 8})],
)
def test_resources_param_keeps_other_resources(existing, expected):
    value = resources_param(existing, "dockyard_fleet_trainer", 8)
    # KubeRay's own reading (getResourcesMap, ray-operator/controllers/ray/common/pod.go): trim
    # quotes, backticks and spaces, then JSON; an escaped quote left inside fails there.
    assert json.loads(value.strip("'\"` ")) == expected
    assert value == "'" + json.dumps(expected, sort_keys=True, separators=(",", ":")) + "'"


def test_resources_param_survives_the_shell_kuberay_runs_ray_start_in():
    """KubeRay writes ``ray start ... --resources=VALUE`` into a bash command line."""
    import shlex

    value = resources_param(None, "dockyard_fleet_trainer", 8)
    words = shlex.split(f"ray start --resources={value} --block")
    assert words[2] == '--resources={"dockyard_fleet_trainer":8}'


def test_worker_groups_are_written_as_kuberay_writes_them_back(render):
    """KubeRay adds its finalizer to a RayJob with a full Update, serializing the worker groups from
    Go structs: `scaleStrategy: {}` appears in each. A list without it changed there, the operator
    took the atomic list, and every re-run of the same spec was refused (409; found on the real
    control plane)."""
    objs, _ = render()
    assert all(g["scaleStrategy"] == {} for g in cluster_spec(objs)["workerGroupSpecs"])
