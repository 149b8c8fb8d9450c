"""Pod Security Standards levels on pod specs from the Kubernetes docs, and on ours."""

from __future__ import annotations

import pytest
import yaml

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.kube import pod_templates
from dockyard_k8s.lint.pss import BASELINE, PRIVILEGED, RESTRICTED, PssResult, evaluate
from support.paths import EXAMPLES

# https://k8s.io/examples/security/example-baseline-pod.yaml, used by the tutorial "Apply Pod Security
# Standards at the Cluster Level"; the tutorial shows the restricted warning below for it.
NGINX = """
apiVersion: v1
kind: Pod
metadata:
  name: nginx
spec:
  containers:
    - image: nginx
      name: nginx
      ports:
        - containerPort: 80
"""
NGINX_RESTRICTED_WARNING = (
    'would violate PodSecurity "restricted:latest": '
    'allowPrivilegeEscalation != false (container "nginx" must set securityContext.allowPrivilegeEscalation=false), '
    'unrestricted capabilities (container "nginx" must set securityContext.capabilities.drop=["ALL"]), '
    'runAsNonRoot != true (pod or container "nginx" must set securityContext.runAsNonRoot=true), '
    'seccompProfile (pod or container "nginx" must set securityContext.seccompProfile.type to "RuntimeDefault" '
    'or "Localhost")')

# content/en/examples/pods/security/security-context.yaml ("Configure a Security Context")
SECURITY_CONTEXT = """
apiVersion: v1
kind: Pod
metadata:
  name: security-context-demo
spec:
  securityContext:
    runAsUser: 1000
    fsGroup: 2000
  volumes:
  - name: sec-ctx-vol
    emptyDir: {}
  containers:
  - name: sec-ctx-demo
    image: gcr.io/google-samples/node-hello:1.0
    volumeMounts:
    - name: sec-ctx-vol
      mountPath: /data/demo
    securityContext:
      allowPrivilegeEscalation: false
"""
# content/en/examples/pods/security/security-context-4.yaml (adds NET_ADMIN and SYS_TIME)
SECURITY_CONTEXT_4 = """
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "security-context-demo-4"},
 "spec": {"containers": [{"name": "sec-ctx-4", "image": "gcr.io/google-samples/hello-app:2.0",
   "securityContext": {"capabilities": {"add": ["NET_ADMIN", "SYS_TIME"]}}}]}}
"""
# content/en/examples/pods/security/seccomp/ga/default-pod.yaml ("Restrict a Container's Syscalls with seccomp")
SECCOMP_DEFAULT = """
apiVersion: v1
kind: Pod
metadata:
  name: default-pod
  labels:
    app.kubernetes.io/name: default-pod
spec:
  securityContext:
    seccompProfile:
      type: RuntimeDefault
  containers:
  - name: test-container
    image: hashicorp/http-echo:1.0
    args:
    - "-text=just made some more syscalls!"
    securityContext:
      allowPrivilegeEscalation: false
"""
# content/en/examples/pods/security/seccomp/ga/audit-pod.yaml
SECCOMP_AUDIT = SECCOMP_DEFAULT.replace("type: RuntimeDefault", "type: Localhost\n      localhostProfile: "
                                        "profiles/audit.json").replace("default-pod", "audit-pod")
RESTRICTED_POD = """
apiVersion: v1
kind: Pod
metadata: {name: restricted}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 1000, seccompProfile: {type: RuntimeDefault}}
  volumes: [{name: scratch, emptyDir: {}}, {name: cfg, configMap: {name: c}}]
  containers:
  - name: app
    image: app:1
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}}
"""


def warning(result: PssResult, level: str = RESTRICTED) -> str:
    """The admission warning the API server gives for ``level``, "" when the pod meets it."""
    found = result.restricted if level == RESTRICTED else result.baseline
    return f'would violate PodSecurity "{level}:latest": ' + ", ".join(map(str, found)) if found else ""


def _spec(text: str):
    pod = yaml.safe_load(text)
    return pod["metadata"], pod["spec"]


def test_the_tutorial_nginx_pod_is_baseline_with_the_documented_warning():
    result = evaluate(*_spec(NGINX))
    assert result.level == BASELINE
    assert result.baseline == []
    assert warning(result) == NGINX_RESTRICTED_WARNING


@pytest.mark.parametrize(("text", "level", "reasons"), [
    (SECURITY_CONTEXT, BASELINE, ["unrestricted capabilities", "runAsNonRoot != true", "seccompProfile"]),
    (SECCOMP_DEFAULT, BASELINE, ["unrestricted capabilities", "runAsNonRoot != true"]),
    (SECCOMP_AUDIT, BASELINE, ["unrestricted capabilities", "runAsNonRoot != true"]),
    (SECURITY_CONTEXT_4, PRIVILEGED, ["allowPrivilegeEscalation != false", "unrestricted capabilities",
                                      "runAsNonRoot != true", "seccompProfile"]),
    (RESTRICTED_POD, RESTRICTED, []),
], ids=["security-context", "seccomp-default", "seccomp-audit", "security-context-4", "restricted"])
def test_docs_pods_meet_the_expected_level(text, level, reasons):
    result = evaluate(*_spec(text))
    assert result.level == level
    assert [v.reason for v in result.restricted] == reasons


def test_security_context_4_is_below_baseline_for_its_capabilities():
    result = evaluate(*_spec(SECURITY_CONTEXT_4))
    assert warning(result, "baseline") == (
        'would violate PodSecurity "baseline:latest": non-default capabilities (container "sec-ctx-4" must not '
        'include "NET_ADMIN", "SYS_TIME" in securityContext.capabilities.add)')


@pytest.mark.parametrize(("change", "reason", "detail"), [
    ({"hostNetwork": True, "hostPID": True}, "host namespaces", "hostNetwork=true, hostPID=true"),
    ({"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}, "hostPath volumes", 'volume "h"'),
    ({"containers": [{"name": "a", "securityContext": {"privileged": True}}]}, "privileged",
     'container "a" must not set securityContext.privileged=true'),
    ({"containers": [{"name": "a", "ports": [{"containerPort": 80, "hostPort": 80}]}]}, "hostPort",
     'container "a" uses hostPort 80'),
    ({"securityContext": {"seccompProfile": {"type": "Unconfined"}}}, "seccompProfile",
     'pod must not set securityContext.seccompProfile.type to "Unconfined"'),
    ({"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"},
                                      {"name": "net.ipv4.tcp_keepalive_time", "value": "1"}]}},
     "forbidden sysctls", "kernel.msgmax"),
    ({"containers": [{"name": "a", "securityContext": {"procMount": "Unmasked"}}]}, "procMount",
     'container "a" must not set securityContext.procMount to "Unmasked"'),
    ({"securityContext": {"seLinuxOptions": {"type": "spc_t"}}}, "seLinuxOptions",
     'pod set forbidden securityContext.seLinuxOptions: type "spc_t"'),
])
def test_baseline_violations(change, reason, detail):
    spec = {"containers": [{"name": "a"}], **change}
    result = evaluate({}, spec)
    assert result.level == PRIVILEGED
    assert [(v.reason, v.detail) for v in result.baseline] == [(reason, detail)]


def test_user_namespaces_relax_the_root_checks():
    spec = {"hostUsers": False, "securityContext": {"runAsUser": 0, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "a", "securityContext": {"allowPrivilegeEscalation": False,
                                                             "capabilities": {"drop": ["ALL"]}}}]}
    assert evaluate({}, spec).level == RESTRICTED


def _templates(sets: list[str]):
    bundle = build_bundle(str(EXAMPLES / "grpo_swe.yaml"), str(EXAMPLES / "grpo_swe.infra.yaml"),
                          Layers(sets=sets, env={}))
    out = {}
    for obj in bundle.objects:
        for t in pod_templates(obj):
            out[t.group or obj["kind"]] = evaluate(t.metadata, t.spec)
    return out


def test_rendered_sandbox_meets_baseline_by_default():
    got = _templates([])
    assert got["Deployment"].level == BASELINE
    assert [str(v) for v in got["Deployment"].restricted] == [
        'runAsNonRoot != true (pod or container "executor" must set securityContext.runAsNonRoot=true)']
    assert {k: v.level for k, v in got.items() if k != "Deployment"} == {
        "head": BASELINE, "trainer": BASELINE, "inference": BASELINE, "submitter": BASELINE}


def test_rendered_sandbox_meets_restricted_with_its_opt_ins():
    got = _templates(["sandbox.security.runAsNonRoot=true", "sandbox.security.readOnlyRootFilesystem=true"])
    assert got["Deployment"].level == RESTRICTED, warning(got["Deployment"])


def test_sandbox_with_hardening_off_still_meets_baseline():
    got = _templates(["sandbox.security.enabled=false"])
    assert got["Deployment"].level == BASELINE


def test_gpu_pods_meet_restricted_with_infra_security_on():
    got = _templates(["infra.security.enabled=true", "infra.security.runAsNonRoot=true"])
    assert {k: got[k].level for k in ("head", "trainer", "inference")} == dict.fromkeys(
        ("head", "trainer", "inference"), RESTRICTED)
    # The submitter is not covered by infra.security (KubeRay's submitter pod): still baseline.
    assert got["submitter"].level == BASELINE
