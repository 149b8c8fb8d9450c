"""Pod and container security: privilege, host access, capabilities, identity, kernel knobs.

Findings about *missing* hardening (no escalation ban, capabilities not dropped, no
seccomp profile, writable root, root user) are ``info`` on ordinary pods and raised for
pods that run untrusted code (our sandbox pool, or any pod annotated
``dockyard-k8s/untrusted: "true"``). Settings that are dangerous in themselves
(privileged, host namespaces, hostPath, dangerous capabilities) are flagged everywhere.
"""

from __future__ import annotations

from collections.abc import Iterator

from dockyard_k8s.kube import as_mapping
from dockyard_k8s.lint.model import ERROR, INFO, WARNING, Context, Hit, Obj, Rule
from dockyard_k8s.lint.pss import BASELINE_CAPABILITIES, RESTRICTED_VOLUMES, SAFE_SYSCTLS, SELINUX_TYPES, ctx
from dockyard_k8s.lint.pss import evaluate as pss_evaluate
from dockyard_k8s.lint.rules._util import cname, effective, volumes


def privileged(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        for path, k in pod.containers():
            if ctx(k).get("privileged") is True:
                yield Hit((*path, "securityContext", "privileged"),
                          f"container {cname(k)!r} runs privileged: it has every capability and all host devices")


def escalation(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        for path, k in pod.containers():
            if ctx(k).get("allowPrivilegeEscalation") is not False:
                yield Hit((*path, "securityContext", "allowPrivilegeEscalation"),
                          f"container {cname(k)!r} does not set allowPrivilegeEscalation: false",
                          ERROR if pod.untrusted else INFO)


def host_namespaces(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        for field in ("hostNetwork", "hostPID", "hostIPC"):
            if pod.spec.get(field) is True:
                yield Hit(pod.at(field), f"{field}: true shares the node's namespace with the pod")


def host_path(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        for i, v in volumes(pod):
            if "hostPath" in v:
                path = (v.get("hostPath") or {}).get("path", "?")
                yield Hit(pod.at("volumes", i, "hostPath"),
                          f"volume {v.get('name')!r} mounts the node's {path}",
                          ERROR if pod.untrusted else WARNING)


def host_port(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        for path, k in pod.containers():
            for j, p in enumerate(k.get("ports") or []):
                if isinstance(p, dict) and p.get("hostPort"):
                    yield Hit((*path, "ports", j, "hostPort"),
                              f"container {cname(k)!r} binds hostPort {p['hostPort']} on the node",
                              ERROR if pod.untrusted else WARNING)


def capabilities(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        for path, k in pod.containers():
            cap = as_mapping(ctx(k).get("capabilities"))
            at = (*path, "securityContext", "capabilities")
            if "ALL" not in (cap.get("drop") or []):
                yield Hit((*at, "drop"), f"container {cname(k)!r} does not drop ALL capabilities",
                          ERROR if pod.untrusted else INFO)
            added = [str(x) for x in cap.get("add") or []]
            dangerous = sorted(x for x in added if x not in BASELINE_CAPABILITIES)
            extra = sorted(x for x in added if x in BASELINE_CAPABILITIES and x != "NET_BIND_SERVICE")
            if dangerous:
                yield Hit((*at, "add"), f"container {cname(k)!r} adds {', '.join(dangerous)} "
                                        "(outside the runtime's default set)", ERROR)
            if extra:
                yield Hit((*at, "add"), f"container {cname(k)!r} adds {', '.join(extra)} "
                                        "(only NET_BIND_SERVICE is allowed at the restricted level)", WARNING)


def run_as_root(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        if pod.spec.get("hostUsers") is False:
            continue  # its own user namespace: root in the pod is not root on the node
        for path, k in pod.containers():
            if effective(pod, k, "runAsUser") == 0:
                yield Hit((*path, "securityContext", "runAsUser"),
                          f"container {cname(k)!r} runs as UID 0 (root)", ERROR if pod.untrusted else WARNING)
            elif effective(pod, k, "runAsNonRoot") is not True:
                yield Hit((*path, "securityContext", "runAsNonRoot"),
                          f"container {cname(k)!r} may run as root (runAsNonRoot is not true)",
                          WARNING if pod.untrusted else INFO)


def seccomp(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        pod_type = (ctx(pod.spec).get("seccompProfile") or {}).get("type")
        if pod_type == "Unconfined":
            yield Hit(pod.at("securityContext", "seccompProfile", "type"),
                      "the pod sets seccomp profile Unconfined", ERROR)
        for path, k in pod.containers():
            own = (ctx(k).get("seccompProfile") or {}).get("type")
            if own == "Unconfined":
                yield Hit((*path, "securityContext", "seccompProfile", "type"),
                          f"container {cname(k)!r} sets seccomp profile Unconfined", ERROR)
            elif own is None and pod_type not in ("RuntimeDefault", "Localhost", "Unconfined"):
                yield Hit((*path, "securityContext", "seccompProfile"),
                          f"container {cname(k)!r} has no seccomp profile (set RuntimeDefault)",
                          ERROR if pod.untrusted else INFO)


def read_only_root(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        for path, k in pod.containers("initContainers", "containers"):
            if ctx(k).get("readOnlyRootFilesystem") is not True:
                yield Hit((*path, "securityContext", "readOnlyRootFilesystem"),
                          f"container {cname(k)!r} can write to its root filesystem",
                          WARNING if pod.untrusted else INFO)


def sa_token(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        if pod.untrusted and pod.spec.get("automountServiceAccountToken") is not False:
            yield Hit(pod.at("automountServiceAccountToken"),
                      "pod runs untrusted code with a Kubernetes API token mounted")


# Annotations (and a pod label) that give a ServiceAccount's pods a cloud identity: name -> whose.
CLOUD_IDENTITY = {
    "eks.amazonaws.com/role-arn": "IRSA",
    "iam.gke.io/gcp-service-account": "GKE workload identity",
    "azure.workload.identity/client-id": "Azure workload identity",
}


def service_account(o: Obj, c: Context) -> Iterator[Hit]:
    """Cloud credentials go by ServiceAccount (EKS Pod Identity associations, IRSA, workload
    identity), whatever automountServiceAccountToken says (issue 22 item 22)."""
    for pod in o.pods:
        if not pod.untrusted:
            continue
        name = str(pod.spec.get("serviceAccountName") or pod.spec.get("serviceAccount") or "default")
        if name == "default":
            yield Hit(pod.at("serviceAccountName"),
                      "pod runs untrusted code as the namespace's default ServiceAccount, which EKS Pod Identity, IRSA "
                      "and workload identity may hand cloud credentials to whatever automountServiceAccountToken "
                      "says; give it a dedicated ServiceAccount with no cloud identity (sandbox.serviceAccountName: "
                      "null renders one)")
            continue
        for sa in c.of_kind("ServiceAccount"):
            if sa.namespace != pod.namespace or sa.name != name:
                continue
            for key, who in CLOUD_IDENTITY.items():
                if sa.annotations.get(key):
                    yield Hit(pod.at("serviceAccountName"), f"pod runs untrusted code as ServiceAccount {name}, whose "
                                                            f"annotation {key} gives it a cloud identity ({who}): its "
                                                            "credentials reach the untrusted code; use a "
                                                            "ServiceAccount without one")
        if pod.labels.get("azure.workload.identity/use") == "true":
            yield Hit((*pod.template.path, "metadata", "labels", "azure.workload.identity/use"),
                      "pod runs untrusted code with azure.workload.identity/use: the webhook injects its "
                      "ServiceAccount's Azure credentials; remove the label")


def volume_types(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        if not pod.untrusted:
            continue
        for i, v in volumes(pod):
            wrong = sorted(k for k in v if k != "name" and k not in RESTRICTED_VOLUMES and k != "hostPath")
            if wrong:
                yield Hit(pod.at("volumes", i), f"volume {v.get('name')!r} uses {', '.join(wrong)}, outside the "
                                                "restricted set (configMap, csi, downwardAPI, emptyDir, ephemeral, "
                                                "persistentVolumeClaim, projected, secret)")


def kernel_knobs(o: Obj, c: Context) -> Iterator[Hit]:
    """Baseline allow-lists: sysctls, procMount, SELinux options, AppArmor."""
    for pod in o.pods:
        for i, s in enumerate(ctx(pod.spec).get("sysctls") or []):
            if isinstance(s, dict) and s.get("name") not in SAFE_SYSCTLS:
                yield Hit(pod.at("securityContext", "sysctls", i, "name"),
                          f"sysctl {s.get('name')!r} is not in the safe set")
        owners = [(pod.at("securityContext"), "the pod", ctx(pod.spec))]
        owners += [((*path, "securityContext"), f"container {cname(k)!r}", ctx(k)) for path, k in pod.containers()]
        for at, who, sc in owners:
            if sc.get("procMount") not in (None, "Default") and pod.spec.get("hostUsers") is not False:
                yield Hit((*at, "procMount"), f"{who} sets procMount {sc.get('procMount')} (unmasked /proc)")
            se = sc.get("seLinuxOptions")
            if isinstance(se, dict) and (str(se.get("type") or "") not in SELINUX_TYPES
                                         or se.get("user") or se.get("role")):
                yield Hit((*at, "seLinuxOptions"), f"{who} sets custom SELinux options")
            aa = sc.get("appArmorProfile")
            if isinstance(aa, dict) and aa.get("type") == "Unconfined":
                yield Hit((*at, "appArmorProfile", "type"), f"{who} runs without AppArmor (Unconfined)")
        for key, value in sorted(pod.annotations.items()):
            if key.startswith("container.apparmor.security.beta.kubernetes.io/") and value == "unconfined":
                yield Hit((*pod.template.path, "metadata", "annotations", key), f"{key} is unconfined")


def untrusted_pss(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        if pod.untrusted:
            result = pss_evaluate(pod.template.metadata, pod.spec)
            if result.baseline:
                yield Hit(pod.spec_path, "pod runs untrusted code but does not meet the baseline Pod Security "
                                         f"Standard: {'; '.join(map(str, result.baseline))}")


RULES = (
    Rule("privileged-container", ERROR, "Containers must not run privileged",
         "A privileged container has every Linux capability and sees all host devices: a process in it is root on "
         "the node. GPU workloads do not need it (the NVIDIA device plugin and container toolkit expose the GPUs). "
         "Fix: remove securityContext.privileged or set it to false.",
         ("PSS baseline", "kube-linter privileged-container", "Polaris runAsPrivileged",
          "kube-score container-security-context-privileged", "Checkov CKV_K8S_16"), privileged),
    Rule("privilege-escalation", INFO, "Containers should set allowPrivilegeEscalation: false",
         "Without allowPrivilegeEscalation: false a process can gain more privileges than its parent (setuid "
         "binaries, file capabilities). Untrusted code must not (error there); on GPU pods it is opt-in hardening "
         "(infra.security.enabled). Fix: securityContext.allowPrivilegeEscalation: false on every container.",
         ("PSS restricted", "kube-linter privilege-escalation-container", "Polaris privilegeEscalationAllowed",
          "Checkov"), escalation, untrusted_severity=ERROR),
    Rule("host-namespaces", ERROR, "Pods must not share the node's network, PID or IPC namespace",
         "hostNetwork, hostPID and hostIPC let a pod see and talk to every process and socket of the node, "
         "bypassing NetworkPolicy. Fix: remove them; use a Service or hostPort-free networking instead.",
         ("PSS baseline", "kube-linter host-network/host-pid/host-ipc",
          "Polaris hostNetworkSet/hostPIDSet/hostIPCSet", "Checkov CKV_K8S_17-19"), host_namespaces),
    Rule("host-path-volume", WARNING, "Pods should not mount hostPath volumes",
         "A hostPath volume exposes the node's filesystem; written to by untrusted code it is a node takeover "
         "(error there). Fix: use emptyDir for scratch, a PersistentVolumeClaim (e.g. FSx, EFS) for shared data.",
         ("PSS baseline", "kube-linter sensitive-host-mounts", "Polaris hostPathSet", "Checkov"), host_path,
         untrusted_severity=ERROR),
    Rule("host-port", WARNING, "Containers should not bind host ports",
         "A hostPort ties the pod to one port on the node (one such pod per node) and exposes it outside "
         "NetworkPolicy. Fix: remove hostPort and reach the pod through a Service.",
         ("PSS baseline", "kube-linter", "Polaris hostPortSet", "Checkov CKV_K8S_26"), host_port,
         untrusted_severity=ERROR),
    Rule("capabilities", INFO, "Containers should drop ALL capabilities and add none",
         "Linux capabilities split root's power; the runtime grants a default set. Dropping ALL removes what a "
         "process does not need; adding capabilities outside the default set (SYS_ADMIN, NET_ADMIN...) is always an "
         "error, adding default ones other than NET_BIND_SERVICE a warning. Fix: capabilities: {drop: [ALL]} and "
         "add only NET_BIND_SERVICE if a port below 1024 is needed.",
         ("PSS baseline + restricted", "kube-linter drop-net-raw-capability",
          "Polaris dangerousCapabilities/insecureCapabilities", "Checkov"), capabilities, untrusted_severity=ERROR),
    Rule("run-as-root", INFO, "Containers should not run as root",
         "A process running as UID 0 in a container is one kernel bug away from root on the node. The sandbox "
         "image's user is root, so runAsNonRoot is an opt-in (sandbox.security.runAsNonRoot) and a warning there; "
         "an explicit runAsUser: 0 on untrusted code is an error. Fix: runAsNonRoot: true and a non-zero runAsUser "
         "(or hostUsers: false for a user namespace).",
         ("PSS restricted", "kube-linter run-as-non-root", "Polaris runAsRootAllowed", "Checkov"),
         run_as_root, untrusted_severity=WARNING),
    Rule("seccomp-profile", INFO, "Containers should run under the RuntimeDefault seccomp profile",
         "Seccomp filters the system calls a process can make; RuntimeDefault blocks the ones containers never "
         "need. Unconfined is always an error; no profile at all is an error for untrusted code. Fix: "
         "securityContext.seccompProfile.type: RuntimeDefault on the pod.",
         ("PSS baseline + restricted", "Polaris", "Checkov"), seccomp, untrusted_severity=ERROR),
    Rule("read-only-root-filesystem", INFO, "Containers should have a read-only root filesystem",
         "A read-only root stops code from replacing binaries or libraries of the image. The sandbox writes "
         "checkouts, so it is an opt-in there (sandbox.security.readOnlyRootFilesystem, with emptyDirs for "
         "sandbox.security.writablePaths). Fix: securityContext.readOnlyRootFilesystem: true and emptyDir mounts "
         "for the paths that must be writable.",
         ("kube-linter no-read-only-root-fs", "Polaris notReadOnlyRootFilesystem",
          "kube-score container-security-context-readonlyrootfilesystem", "Checkov"),
         read_only_root, untrusted_severity=WARNING),
    Rule("service-account-token", ERROR, "Pods running untrusted code must not mount an API token",
         "A mounted service-account token gives whatever code runs in the pod the pod's Kubernetes permissions; "
         "agent-generated code must get none. Fix: automountServiceAccountToken: false "
         "(sandbox.security.automountServiceAccountToken, off by default).",
         ("Polaris automountServiceAccountToken", "Checkov"), sa_token),
    Rule("untrusted-service-account", ERROR, "Pods running untrusted code must not run as a ServiceAccount with "
                                             "cloud credentials",
         "EKS Pod Identity associates an IAM role with a (namespace, ServiceAccount) pair and its agent serves the "
         "credentials to every pod of that account; IRSA, GKE and Azure workload identity do the same through an "
         "annotation of the ServiceAccount. None of them cares about automountServiceAccountToken, and the "
         "namespace's default ServiceAccount is the one most often given a role. Untrusted code must run as a "
         "dedicated ServiceAccount with no cloud identity. Fix: sandbox.serviceAccountName: null (the default) "
         "renders <run>-sandbox, an empty ServiceAccount; never associate a role with it.",
         ("EKS Pod Identity and IRSA docs", "GKE workload identity", "Azure workload identity"), service_account),
    Rule("volume-types", WARNING, "Pods running untrusted code should use only restricted volume types",
         "The restricted Pod Security Standard allows only configMap, csi, downwardAPI, emptyDir, ephemeral, "
         "persistentVolumeClaim, projected and secret volumes; the others (nfs, iscsi, cephfs, gitRepo...) reach "
         "storage directly with the node's credentials. Fix: go through a PersistentVolumeClaim.",
         ("PSS restricted",), volume_types),
    Rule("kernel-settings", ERROR, "Pods must stay within the baseline sysctl, /proc, SELinux and AppArmor lists",
         "Unsafe sysctls change the whole node; an Unmasked procMount exposes the host's /proc; custom SELinux "
         "types, users or roles and an Unconfined AppArmor profile switch off mandatory access control. Fix: keep "
         "to the safe sysctls, procMount Default, SELinux type container_t (or unset) and AppArmor RuntimeDefault.",
         ("PSS baseline",), kernel_knobs),
    Rule("untrusted-pod-security", ERROR, "Pods running untrusted code must meet the baseline Pod Security Standard",
         "The sandbox pool executes agent-generated code: it must meet at least the baseline Pod Security Standard "
         "(and restricted once sandbox.security.runAsNonRoot and readOnlyRootFilesystem are on). The lint output's "
         "'pod security' section shows the level of every pod template. Fix: remove what the finding lists.",
         ("PSS baseline",), untrusted_pss),
)
