"""Every rule: a failing fixture with the exact finding, and the clean fixture that passes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from lintkit import C0, POD, clean_set, gpu_job, run_lint

from dockyard_k8s.lint.model import LintConfig
from dockyard_k8s.lint.registry import RULES

DEP = "Deployment team/web"
GJOB = "Job team/train"
GC0 = ("spec", "template", "spec", "containers", 0)
GPOD = ("spec", "template", "spec")

Objs = list[dict[str, Any]]


def dep(objs: Objs) -> dict[str, Any]:
    return objs[0]


def dep_c(objs: Objs) -> dict[str, Any]:
    return objs[0]["spec"]["template"]["spec"]["containers"][0]


def dep_pod(objs: Objs) -> dict[str, Any]:
    return objs[0]["spec"]["template"]["spec"]


def job(objs: Objs) -> dict[str, Any]:
    return objs[1]


def job_c(objs: Objs) -> dict[str, Any]:
    return objs[1]["spec"]["template"]["spec"]["containers"][0]


def job_pod(objs: Objs) -> dict[str, Any]:
    return objs[1]["spec"]["template"]["spec"]


def drop(kind: str) -> Callable[[Objs], None]:
    def go(objs: Objs) -> None:
        objs[:] = [o for o in objs if o["kind"] != kind]
    return go


def setsc(field: str, value: Any, who: Callable[[Objs], dict[str, Any]] = dep_c) -> Callable[[Objs], None]:
    def go(objs: Objs) -> None:
        sc = who(objs).setdefault("securityContext", {})
        if value is None:
            sc.pop(field, None)
        else:
            sc[field] = value
    return go


def do(*steps: Callable[[Objs], Any]) -> Callable[[Objs], None]:
    def go(objs: Objs) -> None:
        for s in steps:
            s(objs)
    return go


S = "dockyard-k8s/fleet"
NP_MSG = "no NetworkPolicy restricts the ingress and egress of these pods"

# (id, rule, untrusted sandbox labels?, mutation, config, [(severity, object, path, message)])
CASES: list[tuple[str, str, bool, Callable[[Objs], None], LintConfig | None, list[tuple[str, str, tuple, str]]]] = [
    ("privileged", "privileged-container", False, setsc("privileged", True), None,
     [("error", DEP, (*C0, "securityContext", "privileged"),
       "container 'app' runs privileged: it has every capability and all host devices")]),
    ("escalation", "privilege-escalation", False, setsc("allowPrivilegeEscalation", None), None,
     [("info", DEP, (*C0, "securityContext", "allowPrivilegeEscalation"),
       "container 'app' does not set allowPrivilegeEscalation: false")]),
    ("escalation-untrusted", "privilege-escalation", True, setsc("allowPrivilegeEscalation", True), None,
     [("error", DEP, (*C0, "securityContext", "allowPrivilegeEscalation"),
       "container 'app' does not set allowPrivilegeEscalation: false")]),
    ("host-network", "host-namespaces", False, lambda o: dep_pod(o).update(hostNetwork=True), None,
     [("error", DEP, (*POD, "hostNetwork"), "hostNetwork: true shares the node's namespace with the pod")]),
    ("host-path", "host-path-volume", False,
     lambda o: dep_pod(o).update(volumes=[{"name": "host", "hostPath": {"path": "/var/run"}}]), None,
     [("warning", DEP, (*POD, "volumes", 0, "hostPath"), "volume 'host' mounts the node's /var/run")]),
    ("host-port", "host-port", True, lambda o: dep_c(o)["ports"][0].update(hostPort=8080), None,
     [("error", DEP, (*C0, "ports", 0, "hostPort"), "container 'app' binds hostPort 8080 on the node")]),
    ("no-drop", "capabilities", False, setsc("capabilities", {}), None,
     [("info", DEP, (*C0, "securityContext", "capabilities", "drop"),
       "container 'app' does not drop ALL capabilities")]),
    ("add-dangerous", "capabilities", False, setsc("capabilities", {"drop": ["ALL"], "add": ["SYS_ADMIN", "CHOWN"]}),
     None,
     [("error", DEP, (*C0, "securityContext", "capabilities", "add"),
       "container 'app' adds SYS_ADMIN (outside the runtime's default set)"),
      ("warning", DEP, (*C0, "securityContext", "capabilities", "add"),
       "container 'app' adds CHOWN (only NET_BIND_SERVICE is allowed at the restricted level)")]),
    ("uid0", "run-as-root", False, setsc("runAsUser", 0), None,
     [("warning", DEP, (*C0, "securityContext", "runAsUser"), "container 'app' runs as UID 0 (root)")]),
    ("non-root-unset", "run-as-root", True, setsc("runAsNonRoot", None), None,
     [("warning", DEP, (*C0, "securityContext", "runAsNonRoot"),
       "container 'app' may run as root (runAsNonRoot is not true)")]),
    ("unconfined", "seccomp-profile", False, setsc("seccompProfile", {"type": "Unconfined"}), None,
     [("error", DEP, (*C0, "securityContext", "seccompProfile", "type"),
       "container 'app' sets seccomp profile Unconfined")]),
    ("no-seccomp", "seccomp-profile", True, setsc("seccompProfile", None), None,
     [("error", DEP, (*C0, "securityContext", "seccompProfile"),
       "container 'app' has no seccomp profile (set RuntimeDefault)")]),
    ("writable-root", "read-only-root-filesystem", False, setsc("readOnlyRootFilesystem", None), None,
     [("info", DEP, (*C0, "securityContext", "readOnlyRootFilesystem"),
       "container 'app' can write to its root filesystem")]),
    ("isolation-metadata", "sandbox-isolation", True,
     lambda o: o[2]["spec"].update(egress=[{"to": [{"ipBlock": {"cidr": "169.254.169.254/32"}}]}]), None,
     [("error", DEP, POD, "untrusted pods may reach the cloud metadata range 169.254.0.0/16 (169.254.169.254) on "
                          "every port: NetworkPolicy team/all egress[0]")]),
    ("isolation-reserved", "sandbox-isolation", True,  # issue 22 item 25: ranges once counted as public
     lambda o: o[2]["spec"].update(egress=[{"to": [
         {"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
                                                      "100.64.0.0/10", "169.254.0.0/16", "100.100.100.200/32",
                                                      "168.63.129.16/32"]}},
         {"ipBlock": {"cidr": "::/0", "except": ["fc00::/7", "fe80::/10", "fd00:ec2::254/128", "fd00:ec2::23/128"]}}],
         "ports": [{"port": 443}]}]), None,
     [("error", DEP, POD, "untrusted pods may reach IPv6 global unicast space 2000::/3 "
                          "(2000::-3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff) on TCP 443: NetworkPolicy team/all "
                          "egress[0]"),
      ("error", DEP, POD, "untrusted pods may reach private address space 198.18.0.0/15 (198.18.0.0-198.19.255.255) "
                          "on TCP 443: NetworkPolicy team/all egress[0]"),
      ("error", DEP, POD, "untrusted pods may reach private address space 240.0.0.0/4 (240.0.0.0-255.255.255.255) "
                          "on TCP 443: NetworkPolicy team/all egress[0]"),
      ("error", DEP, POD, "untrusted pods may reach private address space 64:ff9b:1::/48 "
                          "(64:ff9b:1::-64:ff9b:1:ffff:ffff:ffff:ffff:ffff) on TCP 443: NetworkPolicy team/all "
                          "egress[0]"),
      ("error", DEP, POD, "untrusted pods may reach private address space 64:ff9b::/96 "
                          "(64:ff9b::-64:ff9b::ffff:ffff) on TCP 443: NetworkPolicy team/all egress[0]")]),
    ("isolation-gpu", "sandbox-isolation", True,
     lambda o: o[2]["spec"].update(egress=[{"to": [{"podSelector": {}}]}], ingress=[{"ports": [{"port": 6379}]}]),
     None,
     [("error", DEP, POD, "an executor may reach another replica on TCP 6379: its ingress admits it "
                          "(NetworkPolicy team/all ingress[0])"),
      ("error", DEP, POD, "untrusted pods may reach every pod of namespace team (every pod without a dockyard-k8s "
                          "fleet label) on every port: NetworkPolicy team/all egress[0]; pods live in private space: "
                          "name the ones they call (a podSelector with matchLabels)"),
      ("error", DEP, POD, "untrusted pods may reach the GPU pod Job team/train on TCP 6379: their egress "
                          "(NetworkPolicy team/all egress[0]) and its ingress (NetworkPolicy team/all ingress[0]) "
                          "both allow it"),
      # issue 22 item 21: a pod of a RayCluster the input does not show (an attached cluster's) counts too
      ("error", DEP, POD, "untrusted pods may reach the pods of RayClusters this input does not render (an attached "
                          "cluster's: label ray.io/cluster, no fleet label) in namespace team on every port: "
                          "NetworkPolicy team/all egress[0]; pods live in private space: name the ones they call (a "
                          "podSelector with matchLabels)")]),
    ("runtime-class", "sandbox-runtime-class", True, lambda o: dep_pod(o).pop("runtimeClassName"), None,
     [("warning", DEP, (*POD, "runtimeClassName"),
       "pods running untrusted code use the node's default runtime: a kernel exploit escapes to the node; set a "
       "sandboxed RuntimeClass (gVisor, Kata) with sandbox.runtimeClassName")]),
    ("ray-auth", "ray-token-auth", False,
     lambda o: o.append({"apiVersion": "ray.io/v1", "kind": "RayCluster",
                         "metadata": {"name": "rc", "namespace": "team"},
                         "spec": {"headGroupSpec": {"template": {"spec": {"containers": [
                             {"name": "ray-head", "env": [{"name": "RAY_AUTH_MODE", "value": "token"}]}]}}}}}), None,
     [("warning", "RayCluster team/rc", ("spec", "headGroupSpec", "template", "spec", "containers", 0, "env"),
       "Ray container 'ray-head' runs without token authentication (RAY_AUTH_MODE=token and RAY_AUTH_TOKEN): "
       "whoever reaches ports 8265, 6379 or 10001 can run code on the cluster")]),
    ("token", "service-account-token", True, lambda o: dep_pod(o).pop("automountServiceAccountToken"), None,
     [("error", DEP, (*POD, "automountServiceAccountToken"),
       "pod runs untrusted code with a Kubernetes API token mounted")]),
    # issue 22 item 22: cloud credentials go by ServiceAccount (EKS Pod Identity, IRSA, workload identity)
    ("default-sa", "untrusted-service-account", True, lambda o: dep_pod(o).pop("serviceAccountName"), None,
     [("error", DEP, (*POD, "serviceAccountName"),
       "pod runs untrusted code as the namespace's default ServiceAccount, which EKS Pod Identity, IRSA and "
       "workload identity may hand cloud credentials to whatever automountServiceAccountToken says; give it a "
       "dedicated ServiceAccount with no cloud identity (sandbox.serviceAccountName: null renders one)")]),
    ("irsa-sa", "untrusted-service-account", True,
     lambda o: o.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {
         "name": "web", "namespace": "team",
         "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/x"}}}), None,
     [("error", DEP, (*POD, "serviceAccountName"),
       "pod runs untrusted code as ServiceAccount web, whose annotation eks.amazonaws.com/role-arn gives it a cloud "
       "identity (IRSA): its credentials reach the untrusted code; use a ServiceAccount without one")]),
    ("nfs", "volume-types", True,
     lambda o: dep_pod(o).update(volumes=[{"name": "data", "nfs": {"server": "fs", "path": "/"}}]), None,
     [("warning", DEP, (*POD, "volumes", 0),
       "volume 'data' uses nfs, outside the restricted set (configMap, csi, downwardAPI, emptyDir, ephemeral, "
       "persistentVolumeClaim, projected, secret)")]),
    ("sysctl", "kernel-settings", False,
     setsc("sysctls", [{"name": "kernel.msgmax", "value": "1"}], dep_pod), None,
     [("error", DEP, (*POD, "securityContext", "sysctls", 0, "name"),
       "sysctl 'kernel.msgmax' is not in the safe set")]),
    ("proc-mount", "kernel-settings", False, setsc("procMount", "Unmasked"), None,
     [("error", DEP, (*C0, "securityContext", "procMount"),
       "container 'app' sets procMount Unmasked (unmasked /proc)")]),
    ("untrusted-privileged", "untrusted-pod-security", True, setsc("privileged", True), None,
     [("error", DEP, POD, "pod runs untrusted code but does not meet the baseline Pod Security Standard: "
                          'privileged (container "app" must not set securityContext.privileged=true)')]),
    ("no-netpol", "network-policy-coverage", False, drop("NetworkPolicy"), None,
     [("info", DEP, POD, NP_MSG), ("info", GJOB, GPOD, NP_MSG)]),
    ("no-netpol-untrusted", "network-policy-coverage", True, drop("NetworkPolicy"), None,
     [("error", DEP, POD, NP_MSG + " (they run untrusted code)"), ("info", GJOB, GPOD, NP_MSG)]),
    ("ingress-only", "network-policy-coverage", False,
     lambda o: o[2]["spec"].update(policyTypes=["Ingress"]), None,
     [("info", DEP, POD, "no NetworkPolicy restricts the egress of these pods"),
      ("info", GJOB, GPOD, "no NetworkPolicy restricts the egress of these pods")]),
    ("nodeport", "service-exposure", False, lambda o: o[4]["spec"].update(type="NodePort"), None,
     [("warning", "Service team/web", ("spec", "type"), "NodePort Service is reachable from outside the cluster")]),
    ("loadbalancer-untrusted", "service-exposure", True, lambda o: o[4]["spec"].update(type="LoadBalancer"), None,
     [("error", "Service team/web", ("spec", "type"),
       "LoadBalancer Service exposes pods that run untrusted code (Deployment team/web) outside the cluster")]),
    ("target-port", "service-target-port", False, lambda o: o[4]["spec"]["ports"][0].update(targetPort="web"), None,
     [("error", "Service team/web", ("spec", "ports", 0, "targetPort"),
       "targetPort 'web' names no container port of the selected pods (http): traffic to port 80 goes nowhere")]),
    ("password", "secret-in-env", False, lambda o: dep_c(o)["env"].append({"name": "DB_PASSWORD", "value": "hunter2"}),
     None, [("error", DEP, (*C0, "env", 1, "value"),
             "container 'app': env DB_PASSWORD looks like a credential written as a literal value")]),
    ("aws-key", "secret-in-env", False,
     lambda o: dep_c(o)["env"].append({"name": "CONFIG", "value": "key=AKIAABCDEFGHIJKLMNOP"}), None,
     [("error", DEP, (*C0, "env", 1, "value"),
       "container 'app': env CONFIG holds an AWS access key id as a literal value")]),
    ("configmap-credential", "secret-in-configmap", False, lambda o: o.append(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "team"},
         "data": {"WANDB_API_KEY": "abc123", "hub.yaml": "token: hf_" + "a" * 34, "MODE": "fast",
                  "HF_TOKEN": "$(HF_TOKEN)", "GOOGLE_APPLICATION_CREDENTIALS": "/var/secrets/google/key.json"}}),
     None, [("error", "ConfigMap team/cfg", ("data", "WANDB_API_KEY"),
             "data key WANDB_API_KEY holds a credential as a literal value"),
            ("error", "ConfigMap team/cfg", ("data", "hub.yaml"),
             "data key hub.yaml holds a Hugging Face token as a literal value")]),
    ("dup-env", "duplicate-env", False, lambda o: dep_c(o)["env"].append({"name": "MODE", "value": "slow"}), None,
     [("error", DEP, (*C0, "env", 1),
       "container 'app': env MODE is defined twice (entries 0 and 1); the last one wins silently")]),
    ("no-resources", "container-resources", False, lambda o: dep_c(o).pop("resources"), None,
     [("warning", DEP, (*C0, "resources"), "container 'app' has no cpu request, memory request, memory limit")]),
    ("no-ephemeral", "ephemeral-storage", True,
     lambda o: dep_c(o).update(resources={"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "1Gi"}}),
     None, [("warning", DEP, (*C0, "resources"), "container 'app' writes untrusted checkouts to disk without an "
                                                  "ephemeral-storage request or limit")]),
    ("gpu-no-limit", "extended-resources", False,
     lambda o: job_c(o).update(resources={"requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": 1},
                                          "limits": {"memory": "64Gi"}}), None,
     [("error", GJOB, (*GC0, "resources", "limits"), "container 'trainer': nvidia.com/gpu is requested without a limit "
                                                     "(the API server rejects it; set limits only, or both equal)")]),
    ("gpu-fraction", "extended-resources", False,
     lambda o: job_c(o)["resources"]["limits"].update({"nvidia.com/gpu": "0.5"}), None,
     [("error", GJOB, (*GC0, "resources", "limits", "nvidia.com/gpu"),
       "container 'trainer': nvidia.com/gpu 0.5 is not a whole number (extended resources cannot be split)")]),
    ("gpu-unequal", "extended-resources", False,
     lambda o: job_c(o)["resources"]["requests"].update({"nvidia.com/gpu": 2}), None,
     [("error", GJOB, (*GC0, "resources", "requests", "nvidia.com/gpu"),
       "container 'trainer': nvidia.com/gpu request 2 differs from its limit 1 (they must be equal)")]),
    ("gpu-no-toleration", "gpu-toleration", False, lambda o: job_pod(o).pop("tolerations"), None,
     [("info", GJOB, (*GPOD, "tolerations"),
       "pod requests 1 GPU(s) but does not tolerate the nvidia.com/gpu:NoSchedule taint GPU node pools usually "
       "carry")]),
    ("no-quota", "namespace-quota", False, do(drop("ResourceQuota"), drop("LimitRange")), None,
     [("info", GJOB, GPOD, "no LimitRange gives default requests and limits in team (set infra.limitRange)"),
      ("info", GJOB, GPOD, "no ResourceQuota limits requests.nvidia.com/gpu in team (set infra.resourceQuota)")]),
    ("latest", "image-tag", False, lambda o: dep_c(o).update(image="nginx:latest"), None,
     [("error", DEP, (*C0, "image"), "container 'app': image nginx:latest uses the moving :latest tag")]),
    ("untagged", "image-tag", False, lambda o: dep_c(o).update(image="registry:5000/team/app"), None,
     [("error", DEP, (*C0, "image"), "container 'app': image registry:5000/team/app has no tag (means :latest)")]),
    ("tag-only", "image-digest", False, lambda o: dep_c(o).update(image="registry:5000/app:1.0"), None,
     [("info", DEP, (*C0, "image"), "container 'app': image registry:5000/app:1.0 is pinned by tag, not digest")]),
    ("pull-always", "image-pull-always", False, lambda o: job_c(o).update(imagePullPolicy="Always"), None,
     [("warning", GJOB, (*GC0, "imagePullPolicy"),
       "container 'trainer': imagePullPolicy Always re-pulls the training image on every pod start (5-10 min for a "
       "cold multi-GB pull)")]),
    ("no-readiness", "probes", False, lambda o: dep_c(o).pop("readinessProbe"), None,
     [("warning", DEP, (*C0, "readinessProbe"), "container 'app' has no readinessProbe")]),
    ("no-liveness", "probes", False, lambda o: dep_c(o).pop("livenessProbe"), None,
     [("info", DEP, (*C0, "livenessProbe"), "container 'app' has no livenessProbe")]),
    ("no-pdb", "pod-disruption-budget", False, drop("PodDisruptionBudget"), None,
     [("warning", DEP, ("spec", "replicas"),
       "2 replicas and no PodDisruptionBudget: a node drain may evict them all at once")]),
    ("pdb-zero", "pod-disruption-budget", False, lambda o: o[3]["spec"].update(maxUnavailable=0), None,
     [("warning", "PodDisruptionBudget team/web", ("spec", "maxUnavailable"),
       "allows no voluntary disruption of Deployment team/web (2 replicas): node drains hang")]),
    ("pdb-min-100", "pod-disruption-budget", False,
     lambda o: o[3].update(spec={"minAvailable": "100%", "selector": {"matchLabels": {"app": "web"}}}), None,
     [("warning", "PodDisruptionBudget team/web", ("spec", "minAvailable"),
       "allows no voluntary disruption of Deployment team/web (2 replicas): node drains hang")]),
    ("two-pdbs", "pod-disruption-budget", False,
     lambda o: o.append({**o[3], "metadata": {"name": "web2", "namespace": "team"}}), None,
     [("error", DEP, POD, "pods are selected by 2 PodDisruptionBudgets (web, web2): the eviction API refuses to "
                          "evict them at all")]),
    ("job-no-ttl", "job-ttl", False, lambda o: job(o)["spec"].pop("ttlSecondsAfterFinished"), None,
     [("warning", GJOB, ("spec", "ttlSecondsAfterFinished"),
       "finished Job and its pods are kept forever (no ttlSecondsAfterFinished)")]),
    ("job-no-deadline", "job-deadline", False, lambda o: job(o)["spec"].pop("activeDeadlineSeconds"), None,
     [("info", GJOB, ("spec", "activeDeadlineSeconds"),
       "Job has no activeDeadlineSeconds: a hung run holds its nodes until someone notices")]),
    ("short-deadline", "deadline-cold-pull", False, lambda o: job(o)["spec"].update(activeDeadlineSeconds=300), None,
     [("warning", GJOB, ("spec", "activeDeadlineSeconds"),
       "activeDeadlineSeconds 300s is shorter than a cold image pull (600s, lint.coldPullSeconds): the run can fail "
       "before its image is on the node")]),
    ("priority", "priority-class", False, lambda o: job_pod(o).pop("priorityClassName"), None,
     [("warning", GJOB, (*GPOD, "priorityClassName"),
       "GPU gang pod without priorityClassName: any pending pod can preempt it and stall the whole gang")]),
    ("default-ns", "namespace", False, lambda o: dep(o)["metadata"].update(namespace="default"), None,
     [("warning", "Deployment default/web", ("metadata", "namespace"), "object lives in the default namespace")]),
    ("no-ns", "namespace", False, lambda o: dep(o)["metadata"].pop("namespace"), None,
     [("info", "Deployment web", ("metadata", "namespace"),
       "no namespace: the object goes wherever kubectl's context points")]),
    ("no-shm", "gpu-shm", False, lambda o: (job_pod(o).pop("volumes"), job_c(o).pop("volumeMounts")), None,
     [("warning", GJOB, (*GPOD, "volumes"), "pod uses 1 GPU(s) without a memory-backed /dev/shm (the container "
                                            "default is 64Mi: NCCL and DataLoader workers fail with 'Bus error')")]),
    ("small-shm", "gpu-shm", False, lambda o: job_pod(o)["volumes"][0]["emptyDir"].update(sizeLimit="4Gi"), None,
     [("warning", GJOB, (*GPOD, "volumes", 0, "emptyDir", "sizeLimit"),
       "/dev/shm sizeLimit 4Gi is below 8Gi (1 GPU(s) x lint.shmPerGpu 8Gi)")]),
    ("runtime-class", "gpu-runtime-class", False, lambda o: None, LintConfig(gpu_runtime_class="nvidia"),
     [("error", GJOB, (*GPOD, "runtimeClassName"), "GPU pod has no runtimeClassName; this cluster needs 'nvidia' "
                                                   "(lint.gpuRuntimeClass) or the container sees no GPU")]),
    ("efa-env-no-device", "nccl-efa", False, lambda o: job_c(o)["env"].append({"name": "FI_PROVIDER", "value": "efa"}),
     None, [("error", GJOB, (*GC0, "env", 1), "container 'trainer' configures libfabric for EFA (FI_PROVIDER) but the "
                                              "pod requests no vpc.amazonaws.com/efa: there is no EFA device, so NCCL "
                                              "fails or falls back to TCP sockets")]),
    ("efa-wrong-provider", "nccl-efa", False,
     do(lambda o: job_c(o)["resources"]["limits"].update({"vpc.amazonaws.com/efa": 4}),
        lambda o: job_c(o)["env"].append({"name": "FI_PROVIDER", "value": "sockets"})), None,
     [("error", GJOB, (*GC0, "env", 1), "container 'trainer' requests 4 EFA device(s) but sets FI_PROVIDER=sockets: "
                                        "NCCL will not use them")]),
    ("cpu-pod-on-gpu-nodes", "cpu-pod-on-gpu-nodes", False, lambda o: dep_pod(o).pop("affinity"), None,
     [("warning", DEP, (*POD, "affinity"),
       "pod requests no GPU, and nothing keeps it off the GPU nodes (nvidia.com/gpu.present=true, "
       "cloud.google.com/gke-accelerator, k8s.amazonaws.com/accelerator): the scheduler may place it on one while "
       "CPU nodes are free, taking CPU and memory the GPU pods need")]),
    ("inline-script", "inline-shell-script", False,
     lambda o: job_c(o).update(command=["bash", "-c", "set -e\nif [ -f x ]; then\n  echo ${A}\nfi\necho done\n"]), None,
     [("info", GJOB, (*GC0, "command", 2), "container 'trainer' runs a 5-line inline shell script using '; then' / "
                                           "'; do', ${...}: move it to a ConfigMap-mounted script")]),
    ("bad-suppression", "invalid-suppression", False,
     lambda o: dep(o)["metadata"].update(annotations={"dockyard-k8s/lint-ignore": "no-such-rule"}), None,
     [("warning", DEP, ("metadata", "annotations", "dockyard-k8s/lint-ignore"),
       "dockyard-k8s/lint-ignore names unknown rule 'no-such-rule'")]),
]


@pytest.mark.parametrize("untrusted", [False, True])
def test_the_clean_objects_pass_every_rule(untrusted, clean_objects):
    assert [o["kind"] for o in clean_objects] == [o["kind"] for o in clean_set(untrusted)]
    report = run_lint(clean_set(untrusted))
    assert [(f.rule, f.message) for f in report.findings] == []
    assert report.exit_code == 0


@pytest.mark.parametrize(("rule", "untrusted", "mutate", "config", "expected"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule_reports_the_exact_finding(rule, untrusted, mutate, config, expected):
    objs = clean_set(untrusted)
    mutate(objs)
    report = run_lint(objs, config)
    got = [(f.severity, f.object, f.path, f.message) for f in report.findings if f.rule == rule]
    assert got == expected


def test_every_rule_has_a_failing_case():
    separately_tested = {"statefulset-service"}  # needs its own objects, see below
    assert {r.id for r in RULES} - {c[1] for c in CASES} - separately_tested == set()


def test_statefulset_needs_a_headless_service():
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "train", "namespace": "team"},
           "spec": {"serviceName": "train-svc", "replicas": 2, "selector": {"matchLabels": {"app": "t"}},
                    "template": {"metadata": {"labels": {"app": "t"}}, "spec": {"containers": [{"name": "c"}]}}}}
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "train-svc", "namespace": "team"},
           "spec": {"clusterIP": "None", "selector": {"app": "t"}}}

    def found(objs):
        return [(f.path, f.message) for f in run_lint(objs).findings if f.rule == "statefulset-service"]

    assert found([sts, svc]) == []
    assert found([sts]) == [(("spec", "serviceName"),
                             "serviceName 'train-svc' names no Service among the linted objects")]
    svc["spec"]["clusterIP"] = "10.0.0.1"
    ((path, message),) = found([sts, svc])  # the whole message: tests/golden/messages/lint.txt
    assert path == ("spec", "serviceName") and message.startswith("Service 'train-svc' is not headless")


def test_rayjob_rules_on_deadlines_and_cleanup():
    rayjob = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "r", "namespace": "team"},
              "spec": {"shutdownAfterJobFinishes": False, "activeDeadlineSeconds": 7200,
                       "preRunningDeadlineSeconds": 120, "rayClusterSpec": {"headGroupSpec": {"template": {
                           "spec": {"containers": [{"name": "head"}]}}}}}}
    report = run_lint([rayjob])
    got = {f.rule: f.message for f in report.findings if f.rule in ("job-ttl", "deadline-cold-pull")}
    assert len(got) == 2  # one finding each, worded in tests/golden/messages/lint.txt
    assert got["job-ttl"].startswith("the RayCluster (and its GPUs) outlives")
    assert got["deadline-cold-pull"].startswith("preRunningDeadlineSeconds 120s is shorter")
    assert "(600s, lint.coldPullSeconds)" in got["deadline-cold-pull"]


def test_efa_without_gpu_is_a_warning():
    objs = clean_set()
    job_c(objs)["resources"]["limits"] = {"memory": "64Gi", "vpc.amazonaws.com/efa": 1}
    report = run_lint(objs)
    ((severity, message),) = [(f.severity, f.message) for f in report.findings if f.rule == "nccl-efa"]
    assert severity == "warning" and message.startswith("pod requests 1 EFA device(s) but no GPU")  # golden lint.txt


def test_shm_minimum_scales_with_gpus_and_config():
    objs = [gpu_job()]
    c = objs[0]["spec"]["template"]["spec"]["containers"][0]
    c["resources"]["limits"]["nvidia.com/gpu"] = 8
    report = run_lint(objs, LintConfig(shm_per_gpu=__import__("fractions").Fraction(2**30)))
    assert [f.message for f in report.findings if f.rule == "gpu-shm"] == []
    report = run_lint(objs)
    assert [f.message for f in report.findings if f.rule == "gpu-shm"] == [
        "/dev/shm sizeLimit 8Gi is below 64Gi (8 GPU(s) x lint.shmPerGpu 8Gi)"]


def test_a_public_service_or_ingress_in_front_of_a_gpu_pod_is_a_path_from_untrusted_pods():
    """On hand-written objects: the untrusted pods' public egress, back in through
    a LoadBalancer, or through an Ingress whose controller the GPU pod's ingress admits."""
    def objs(*extra):
        o = clean_set(True)
        o[2]["spec"].update(egress=[{"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": [
            "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "198.18.0.0/15", "240.0.0.0/4",
            "169.254.0.0/16", "168.63.129.16/32"]}}], "ports": [{"port": 443}, {"port": 8080}]}])
        return [*o, *extra]

    def isolation(objects):
        return [(f.severity, f.message) for f in run_lint(objects).findings if f.rule == "sandbox-isolation"]

    lb = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "train-lb", "namespace": "team"},
          "spec": {"type": "LoadBalancer", "selector": {"app": "train"}, "ports": [{"port": 8080}]}}
    # the whole messages: tests/golden/messages/lint.txt
    ((severity, message),) = isolation(objs(lb))
    assert severity == "error" and "the GPU pod Job team/train from outside" in message
    assert "Service team/train-lb is type LoadBalancer" in message and "on TCP 8080" in message
    assert "(NetworkPolicy team/all egress[0])" in message
    assert message.endswith("(sandbox.networkPolicy.allowEgress: false)")
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "train", "namespace": "team"},
           "spec": {"selector": {"app": "train"}, "ports": [{"port": 80, "targetPort": 8080}]}}
    ing = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "train", "namespace": "team"},
           "spec": {"rules": [{"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {
               "service": {"name": "train", "port": {"number": 80}}}}]}}]}}
    (only,) = isolation(objs(svc, ing))  # team/all isolates the GPU pod's ingress: no controller admitted
    assert only[0] == "warning" and only[1].startswith("Ingress team/train (backend Service train) routes the "
                                                       "ingress controller's public load balancer to the GPU pod")
    controller = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                  "metadata": {"name": "from-nginx", "namespace": "team"},
                  "spec": {"podSelector": {"matchLabels": {"app": "train"}}, "policyTypes": ["Ingress"],
                           "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {
                               "kubernetes.io/metadata.name": "ingress-nginx"}}}]}]}}
    ((severity, message),) = isolation(objs(svc, ing, controller))
    assert severity == "error" and "the GPU pod Job team/train from outside" in message
    assert "Ingress team/train (backend Service train)" in message
    assert "on TCP 443 of the ingress controller's" in message
    assert "(NetworkPolicy team/from-nginx ingress[0])" in message and "(NetworkPolicy team/all egress[0])" in message
