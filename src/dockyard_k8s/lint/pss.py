"""Pod Security Standards: which level (privileged, baseline, restricted) a pod spec meets.

Mirrors the checks of the Kubernetes ``pod-security-admission`` library
(``staging/src/k8s.io/pod-security-admission/policy/check_*.go``, "latest" version), with
the same reasons and details, so a violation reads like the admission warning users see::

    would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false
    (container "nginx" must set securityContext.allowPrivilegeEscalation=false), ...

Checks run in the upstream order (by check id); at the restricted level the restricted
checks replace their baseline counterparts (capabilities, seccomp, hostPath -> volume types).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from dockyard_k8s.errors import MALFORMED_DATA
from dockyard_k8s.kube import as_mapping

PRIVILEGED, BASELINE, RESTRICTED = "privileged", "baseline", "restricted"

# Capabilities the baseline level allows to be added (the container runtime's default set).
BASELINE_CAPABILITIES = frozenset({
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
    "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
})
# Namespaced, isolated sysctls (Kubernetes 1.32 "safe" set; docs: Using sysctls in a cluster).
SAFE_SYSCTLS = frozenset({
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
})
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
# Volume sources the restricted level allows.
RESTRICTED_VOLUMES = frozenset({
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret",
})
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"


@dataclass(frozen=True, slots=True)
class Violation:
    check: str  # upstream check id
    reason: str
    detail: str

    def __str__(self) -> str:
        return f"{self.reason} ({self.detail})"


@dataclass(frozen=True, slots=True)
class PssResult:
    level: str  # the highest level the pod meets
    baseline: list[Violation]  # what keeps it from baseline
    restricted: list[Violation]  # what keeps it from restricted (baseline violations included)


# --- helpers --------------------------------------------------------------------------------


def _containers(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(field) or []:
            if isinstance(c, dict):
                yield c


def ctx(obj: dict[str, Any]) -> dict[str, Any]:
    """The securityContext of a pod spec or container ({} when unset)."""
    return as_mapping(obj.get("securityContext"))


def _quote(names: list[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def _containers_phrase(names: list[str]) -> str:
    return f"{'container' if len(names) == 1 else 'containers'} {_quote(names)}"


def _bad(spec: dict[str, Any], test: Callable[[dict[str, Any]], bool]) -> list[str]:
    """Names of the containers whose securityContext passes ``test``."""
    return [_name(c) for c in _containers(spec) if test(ctx(c))]


def _owners(spec: dict[str, Any], test: Callable[[dict[str, Any]], bool]) -> list[str]:
    """``pod`` when the pod's securityContext passes ``test``, then the containers whose does."""
    bad = _bad(spec, test)
    return (["pod"] if test(ctx(spec)) else []) + ([_containers_phrase(bad)] if bad else [])


def _name(c: dict[str, Any]) -> str:
    return str(c.get("name", ""))


def _user_namespace(spec: dict[str, Any]) -> bool:
    """Pods with their own user namespace (hostUsers: false) may run as root (KEP-127)."""
    return spec.get("hostUsers") is False


def _windows(spec: dict[str, Any]) -> bool:
    os_ = spec.get("os")
    return isinstance(os_, dict) and os_.get("name") == "windows"


# --- checks: (metadata, spec) -> violation or None -------------------------------------------

Check = Callable[[dict[str, Any], dict[str, Any]], "Violation | None"]


def allow_privilege_escalation(meta: dict[str, Any], spec: dict[str, Any]) -> Violation | None:
    if _windows(spec):
        return None
    bad = _bad(spec, lambda sc: sc.get("allowPrivilegeEscalation") is not False)
    if bad:
        return Violation("allowPrivilegeEscalation", "allowPrivilegeEscalation != false",
                         f"{_containers_phrase(bad)} must set securityContext.allowPrivilegeEscalation=false")
    return None


def app_armor(meta: dict[str, Any], spec: dict[str, Any]) -> Violation | None:
    bad: list[str] = []
    for key, value in sorted(as_mapping(meta.get("annotations")).items()):
        if str(key).startswith(APPARMOR_ANNOTATION) and not (
                value == "runtime/default" or str(value).startswith("localhost/")):
            bad.append(f'{key}="{value}"')
    for owner, sc in [("pod", ctx(spec))] + [(f'container "{_name(c)}"', ctx(c)) for c in _containers(spec)]:
        profile = sc.get("appArmorProfile")
        if isinstance(profile, dict) and profile.get("type") not in (None, "RuntimeDefault", "Localhost"):
            bad.append(f'{owner} must not set securityContext.appArmorProfile.type to "{profile.get("type")}"')
    if bad:
        reason = "forbidden AppArmor profile" + ("s" if len(bad) > 1 else "")
        return Violation("appArmorProfile", reason, ", ".join(bad))
    return None


def capabilities_baseline(meta: dict[str, Any], spec: dict[str, Any]) -> Violation | None:
    bad, caps = [], set()
    for c in _containers(spec):
        added = (ctx(c).get("capabilities") or {}).get("add") or []
        extra = {str(x) for x in added if x not in BASELINE_CAPABILITIES}
        if extra:
            bad.append(_name(c))
            caps |= extra
    if bad:
        return Violation("capabilities_baseline", "non-default capabilities",
                         f"{_containers_phrase(bad)} must not include {_quote(sorted(caps))} in "
                         "securityContext.capabilities.add")
    return None


def capabilities_restricted(meta: dict[str, Any], spec: dict[str, Any]) -> Violation | None:
    if _windows(spec):
        return None
    missing_drop, adding, caps = [], [], set()
    for c in _containers(spec):
        cap = ctx(c).get("capabilities")
        if not isinstance(cap, dict):
            missing_drop.append(_name(c))
            continue
        if "ALL" not in (cap.get("drop") or []):
            missing_drop.append(_name(c))
        extra = {str(x) for x in cap.get("add") or [] if x != "NET_BIND_SERVICE"}
        if extra:
            adding.append(_name(c))
            caps |= extra
    details = []
    if missing_drop:
        details.append(f'{_containers_phrase(missing_drop)} must set securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(f"{_containers_phrase(adding)} must not include {_quote(sorted(caps))} in "
                       "securityContext.capabilities.add")
    return Violation("capabilities_restricted", "unrestricted capabilities", "; ".join(details)) if details else None


def host_namespaces(meta: dict[str, Any], spec: dict[str, Any]) -> Violation | None:
    bad = [f"{f}=true" for f in ("hostNetwork", "hostPID", "hostIPC") if spec.get(f) is True]
    return Violation("hostNamespaces", "host namespaces", ", ".join(bad)) if bad else None


def host_path_volumes(meta: dict[str, Any], spec: dict[str, Any]) -> Violation | None:
    bad = [str(v.get("name", "")) for v in spec.get("volumes") or [] if isinstance(v, dict) and "hostPath" in v]
    if bad:
        return Violation("hostPathVolumes", "hostPath volumes",
                         f"{'volume' if len(bad) == 1 else 'volumes'} {_quote(bad)}")
    return None


def host_ports(meta: dict[str, Any], spec: dict[str, Any]) -> Violation | None:
    bad, ports = [], set()
    for c in _containers(spec):
        used = [p.get("hostPort") for p in c.get("ports") or [] if isinstance(p, dict) and p.get("hostPort")]
        if used:
            bad.append(_name(c))
            ports |= {str(p) for p in used}
    if bad:
        verb = "uses" if len(bad) == 1 else "use"
        noun = "hostPort" if len(ports) == 1 else "hostPorts"
        return Violation("hostPorts", "hostPort", f"{_containers_phrase(bad)} {verb} {noun} {', '.join(sorted(ports))}")
    return None


def host_process(meta: dict[str, Any], spec: dict[str, Any]) -> Violation | None:
    owners = _owners(spec, lambda sc: (sc.get("windowsOptions") or {}).get("hostProcess") is True)
    if owners:
        return Violation("hostProcess", "hostProcess",
                         f"{' and '.join(owners)} must not set securityContext.windowsOptions.hostProcess=true")
    return None


def privileged(meta: dict[str, Any], spec: dict[str, Any]) -> Violation | None:
    bad = _bad(spec, lambda sc: sc.get("privileged") is True)
    if bad:
        return Violation("privileged", "privileged",
                         f"{_containers_phrase(bad)} must not set securityContext.privileged=true")
    return None


def proc_mount(meta: dict[str, Any], spec: dict[str, Any]) -> Violation | None:
    if _user_namespace(spec):
        return None
    bad, kinds = [], set()
    for c in _containers(spec):
        kind = ctx(c).get("procMount")
        if kind not in (None, "Default"):
            bad.append(_name(c))
            kinds.add(str(kind))
    if bad:
        return Violation("procMount", "procMount",
                         f"{_containers_phrase(bad)} must not set securityContext.procMount to {_quote(sorted(kinds))}")
    return None


def restricted_volumes(meta: dict[str, Any], spec: dict[str, Any]) -> Violation | None:
    bad, kinds = [], set()
    for v in spec.get("volumes") or []:
        if not isinstance(v, dict):
            continue
        sources = [k for k in v if k != "name"]
        wrong = [k for k in sources if k not in RESTRICTED_VOLUMES]
        if wrong:
            bad.append(str(v.get("name", "")))
            kinds |= set(wrong)
    if bad:
        detail = (f"{'volume' if len(bad) == 1 else 'volumes'} {_quote(bad)} {'uses' if len(bad) == 1 else 'use'} "
                  f"restricted volume type{'s' if len(kinds) > 1 else ''} {_quote(sorted(kinds))}")
        return Violation("restrictedVolumes", "restricted volume types", detail)
    return None


def run_as_non_root(meta: dict[str, Any], spec: dict[str, Any]) -> Violation | None:
    if _user_namespace(spec):
        return None
    setters, explicit, implicit = [], [], []
    pod_value = ctx(spec).get("runAsNonRoot")
    if pod_value is False:
        setters.append("pod")
    for c in _containers(spec):
        value = ctx(c).get("runAsNonRoot")
        if value is False:
            explicit.append(_name(c))
        elif value is None and pod_value is not True:
            implicit.append(_name(c))
    if explicit:
        setters.append(_containers_phrase(explicit))
    if setters:
        return Violation("runAsNonRoot", "runAsNonRoot != true",
                         f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false")
    if implicit:
        return Violation("runAsNonRoot", "runAsNonRoot != true",
                         f"pod or {_containers_phrase(implicit)} must set securityContext.runAsNonRoot=true")
    return None


def run_as_user(meta: dict[str, Any], spec: dict[str, Any]) -> Violation | None:
    if _user_namespace(spec):
        return None
    setters = _owners(spec, lambda sc: sc.get("runAsUser") == 0)
    if setters:
        return Violation("runAsUser", "runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0")
    return None


def se_linux_options(meta: dict[str, Any], spec: dict[str, Any]) -> Violation | None:
    def bad_fields(sc: dict[str, Any]) -> list[str]:
        opts = sc.get("seLinuxOptions")
        if not isinstance(opts, dict):
            return []
        out = []
        if str(opts.get("type") or "") not in SELINUX_TYPES:
            out.append(f'type "{opts.get("type")}"')
        for f in ("user", "role"):
            if opts.get(f):
                out.append(f'{f} "{opts.get(f)}"')
        return out

    owners, fields = [], []
    if pod_fields := bad_fields(ctx(spec)):
        owners.append("pod")
        fields += pod_fields
    bad = []
    for c in _containers(spec):
        if cf := bad_fields(ctx(c)):
            bad.append(_name(c))
            fields += [f for f in cf if f not in fields]
    if bad:
        owners.append(_containers_phrase(bad))
    if owners:
        return Violation("seLinuxOptions", "seLinuxOptions",
                         f"{' and '.join(owners)} set forbidden securityContext.seLinuxOptions: {', '.join(fields)}")
    return None


def seccomp_baseline(meta: dict[str, Any], spec: dict[str, Any]) -> Violation | None:
    setters = _owners(spec, lambda sc: (sc.get("seccompProfile") or {}).get("type") == "Unconfined")
    if setters:
        return Violation("seccompProfile_baseline", "seccompProfile",
                         f'{" and ".join(setters)} must not set securityContext.seccompProfile.type to "Unconfined"')
    return None


def seccomp_restricted(meta: dict[str, Any], spec: dict[str, Any]) -> Violation | None:
    if _windows(spec):
        return None
    valid = ("RuntimeDefault", "Localhost")
    setters, bad_values, explicit, implicit = [], set(), [], []
    pod_profile = ctx(spec).get("seccompProfile")
    pod_ok = False
    if isinstance(pod_profile, dict):
        if pod_profile.get("type") in valid:
            pod_ok = True
        else:
            setters.append("pod")
            bad_values.add(str(pod_profile.get("type")))
    for c in _containers(spec):
        profile = ctx(c).get("seccompProfile")
        if isinstance(profile, dict):
            if profile.get("type") not in valid:
                explicit.append(_name(c))
                bad_values.add(str(profile.get("type")))
        elif not pod_ok:
            implicit.append(_name(c))
    if explicit:
        setters.append(_containers_phrase(explicit))
    if setters:
        return Violation("seccompProfile_restricted", "seccompProfile",
                         f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to "
                         f"{_quote(sorted(bad_values))}")
    if implicit:
        return Violation("seccompProfile_restricted", "seccompProfile",
                         f'pod or {_containers_phrase(implicit)} must set securityContext.seccompProfile.type to '
                         '"RuntimeDefault" or "Localhost"')
    return None


def sysctls(meta: dict[str, Any], spec: dict[str, Any]) -> Violation | None:
    bad = [str(s.get("name")) for s in ctx(spec).get("sysctls") or []
           if isinstance(s, dict) and s.get("name") not in SAFE_SYSCTLS]
    return Violation("sysctls", "forbidden sysctls", ", ".join(bad)) if bad else None


# (check, level it belongs to, baseline checks it replaces at restricted), in upstream id order.
CHECKS: tuple[tuple[Check, str, tuple[str, ...]], ...] = (
    (allow_privilege_escalation, RESTRICTED, ()),
    (app_armor, BASELINE, ()),
    (capabilities_baseline, BASELINE, ()),
    (capabilities_restricted, RESTRICTED, ("capabilities_baseline",)),
    (host_namespaces, BASELINE, ()),
    (host_path_volumes, BASELINE, ()),
    (host_ports, BASELINE, ()),
    (host_process, BASELINE, ()),
    (privileged, BASELINE, ()),
    (proc_mount, BASELINE, ()),
    (restricted_volumes, RESTRICTED, ("hostPathVolumes",)),
    (run_as_non_root, RESTRICTED, ()),
    (run_as_user, RESTRICTED, ()),
    (se_linux_options, BASELINE, ()),
    (seccomp_baseline, BASELINE, ()),
    (seccomp_restricted, RESTRICTED, ("seccompProfile_baseline",)),
    (sysctls, BASELINE, ()),
)
_REPLACED = {r for _, _, replaces in CHECKS for r in replaces}


def evaluate(metadata: dict[str, Any] | None, spec: dict[str, Any]) -> PssResult:
    """The level a pod (its metadata and spec) meets, and what stands in the way."""
    meta = metadata or {}
    found: list[tuple[str, Violation]] = []
    for check, level, _ in CHECKS:
        try:
            v = check(meta, spec)
        except MALFORMED_DATA:  # a malformed field
            v = Violation(check.__name__.lstrip("_"), "malformed pod spec",
                          "a field this check reads has an unexpected type; `dockyard-k8s validate` says which")
        if v is not None:
            found.append((level, v))
    baseline = [v for level, v in found if level == BASELINE]
    restricted = [v for _, v in found if v.check not in _REPLACED]
    level = RESTRICTED if not restricted else BASELINE if not baseline else PRIVILEGED
    return PssResult(level, baseline, restricted)
