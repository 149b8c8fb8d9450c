"""Network and Ray-auth settings a user can get wrong: each is reported at the line written
(exit 2, nothing rendered), and what is allowed on purpose is printed by `check`."""

from __future__ import annotations

from typing import Any

import pytest

from dockyard_k8s.cli import main
from support.cli import summary_line

HEAD = "infra:\n  namespace: team\n  image: reg.example.com/ubuntu-swe:1.0\n"


def check(capsys: Any, write: Any, body: str, *extra: str) -> tuple[int, str, str, str]:
    recipe = write("exp.yaml", "model: m\n")
    infra = write("exp.infra.yaml", HEAD + body)
    code = main(["check", recipe, "--infra", infra, *extra])
    out, err = capsys.readouterr()
    return code, out, err, infra


@pytest.mark.parametrize(("body", "line", "key", "says"), [
    ("sandbox:\n  networkPolicy:\n    allowedEgressCidrs: [169.254.169.254/32]\n", "6:26",
     "sandbox.networkPolicy.allowedEgressCidrs[0]", "got 169.254.169.254/32: a cloud metadata range (inside "
                                                    "169.254.0.0/16), where node credentials are served"),
    ("sandbox:\n  networkPolicy:\n    allowedEgressCidrs:\n      - cidr: 168.63.129.16/32\n        private: true\n",
     "7:15", "sandbox.networkPolicy.allowedEgressCidrs[0].cidr", "got 168.63.129.16/32: a cloud metadata range,"),
    ("sandbox:\n  networkPolicy:\n    allowedEgressCidrs:\n      - fd00:ec2::254/128\n", "7:9",
     "sandbox.networkPolicy.allowedEgressCidrs[0]", "a cloud metadata range"),
    ("sandbox:\n  networkPolicy:\n    allowEgress: false\n    allowedEgressCidrs:\n      - 140.82.112.0/20\n"
     "      - 10.20.0.0/16\n", "9:9", "sandbox.networkPolicy.allowedEgressCidrs[1]",
     "got 10.20.0.0/16: private address space (inside 10.0.0.0/8), where pods, Services and internal systems live "
     "on most clusters; the sandbox runs untrusted code, so write {cidr: 10.20.0.0/16, private: true} if it must "
     "reach it (`check` lists it)"),
    # issue 22 item 25: once counted as public, each internal somewhere
    ("sandbox:\n  networkPolicy:\n    allowedEgressCidrs: [2606:4700::/32]\n", "6:26",
     "sandbox.networkPolicy.allowedEgressCidrs[0]", "got 2606:4700::/32: IPv6 global unicast (inside 2000::/3), where "
                                                    "IPv6 clusters put pod addresses"),
    ("sandbox:\n  networkPolicy:\n    allowedEgressCidrs: [64:ff9b::/96]\n", "6:26",
     "sandbox.networkPolicy.allowedEgressCidrs[0]", "got 64:ff9b::/96: NAT64 space"),
    ("sandbox:\n  networkPolicy:\n    allowedEgressCidrs: [240.1.0.0/16]\n", "6:26",
     "sandbox.networkPolicy.allowedEgressCidrs[0]", "got 240.1.0.0/16: reserved space (inside 240.0.0.0/4)"),
    ("sandbox:\n  networkPolicy:\n    allowedEgressCidrs: [198.18.0.0/15]\n", "6:26",
     "sandbox.networkPolicy.allowedEgressCidrs[0]", "got 198.18.0.0/15: benchmarking space"),
    ("kuberay:\n  networkPolicy:\n    extraIngress:\n      - from: [{ipBlock: {cidr: '2600::/12'}}]\n", "7:33",
     "kuberay.networkPolicy.extraIngress[0].from[0].ipBlock.cidr", "got 2600::/12, which covers private or "
                                                                   "link-local space (2000::/3)"),
    ("sandbox:\n  networkPolicy:\n    allowedEgressCidrs:\n      - {cidr: 8.8.8.0/24, private: true}\n", "7:37",
     "sandbox.networkPolicy.allowedEgressCidrs[0].private", "8.8.8.0/24 is not private address space"),
    ("sandbox:\n  networkPolicy:\n    allowedEgressCidrs:\n      - cidr: 140.82.112.0/20\n"
     "        ports: [{port: 8100, endPort: 8000}]\n", "8:39",
     "sandbox.networkPolicy.allowedEgressCidrs[0].ports[0].endPort", "got 8000, expected a port >= 8100"),
    ("sandbox:\n  networkPolicy:\n    ingressFrom:\n      - ipBlock: {cidr: 10.0.0.0/8}\n", "7:25",
     "sandbox.networkPolicy.ingressFrom[0].ipBlock.cidr", "covers private or link-local space"),
    ("kuberay:\n  networkPolicy:\n    extraIngress:\n      - ports: [{port: 8080}]\n", "7:9",
     "kuberay.networkPolicy.extraIngress[0]", "an extra ingress rule without `from` admits every pod, the "
                                              "sandbox pods' too"),
    ("kuberay:\n  networkPolicy:\n    extraIngress:\n      - from: [{ipBlock: {cidr: 0.0.0.0/0}}]\n", "7:33",
     "kuberay.networkPolicy.extraIngress[0].from[0].ipBlock.cidr", "got 0.0.0.0/0, which covers private"),
    ("kuberay:\n  rayVersion: '2.49.0'\n", "5:15", "kuberay.rayVersion",
     "got '2.49.0': Ray token authentication (kuberay.auth.mode: token, the default) needs Ray >= 2.52.0"),
    ("kuberay:\n  automountServiceAccountToken: false\n  spec: {enableInTreeAutoscaling: true}\n", "5:33",
     "kuberay.automountServiceAccountToken", "the autoscaler sidecar talks to the API server"),
    ("sandbox:\n  networkPolicy:\n    extraEgress:\n      - ports: [{port: 8000}]\n", "7:9",
     "sandbox.networkPolicy.extraEgress[0]", "without `to` reaches every address, cloud metadata endpoints"),
    ("sandbox:\n  networkPolicy:\n    extraEgress:\n      - to: [{ipBlock: {cidr: 10.0.0.0/8}}]\n", "7:24",
     "sandbox.networkPolicy.extraEgress[0].to[0].ipBlock", "put the range in sandbox.networkPolicy.allowedEgressCidrs"),
    ("sandbox:\n  serviceAccountName: default\n", "5:23", "sandbox.serviceAccountName",
     "got 'default': the namespace's default ServiceAccount is the one EKS Pod Identity, IRSA and workload "
     "identity most often hand cloud credentials to"),
    ("sandbox:\n  networkPolicy:\n    allowedEgresCidrs: [140.82.112.0/20]\n", "6:5",
     "sandbox.networkPolicy.allowedEgresCidrs", "did you mean 'allowedEgressCidrs'?"),
])
def test_mistakes_are_reported_at_their_line(capsys: Any, write: Any, body: str, line: str, key: str,
                                             says: str) -> None:
    code, out, err, infra = check(capsys, write, body)
    assert code == 2 and out == "" and "Traceback" not in err
    first = err.splitlines()[0]
    assert first.startswith(f"{infra}:{line}: {key}: "), first
    assert says in first
    assert err.rstrip().endswith("nothing was rendered or applied.")


def test_an_ipblock_covering_private_space_is_refused_even_with_excepts_left_open(capsys: Any, write: Any) -> None:
    body = ("kuberay:\n  networkPolicy:\n    extraIngress:\n      - from: [{ipBlock: {cidr: 0.0.0.0/0, except: "
            "[10.0.0.0/8]}}]\n")
    code, _, err, _ = check(capsys, write, body)
    assert code == 2 and "172.16.0.0/12" in err
    every = ", ".join(["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "198.18.0.0/15",
                       "240.0.0.0/4", "169.254.0.0/16", "100.100.100.200/32", "168.63.129.16/32"])
    body = ("kuberay:\n  networkPolicy:\n    extraIngress:\n"
            f"      - from: [{{ipBlock: {{cidr: 0.0.0.0/0, except: [{every}]}}}}]\n")
    code, _out, err, _ = check(capsys, write, body)
    assert code == 0, err


def test_what_is_allowed_on_purpose_is_printed(capsys: Any, write: Any) -> None:
    body = ("sandbox:\n  networkPolicy:\n    allowEgress: false\n    allowedEgressCidrs:\n      - 140.82.112.0/20\n"
            "      - {cidr: 10.30.0.0/16, ports: [443], private: true}\n    ingressFrom:\n"
            "      - namespaceSelector: {matchLabels: {team: eval}}\n")
    code, out, err, _ = check(capsys, write, body)
    assert code == 0, err  # the lines whole: tests/golden/messages/check-report.txt
    ingress, egress = summary_line(out, "ingress"), summary_line(out, "egress")
    assert ":9090 ← the run's Ray pods" in ingress and "+ 1 more source(s)" in ingress
    assert "140.82.112.0/20 (every port); 10.30.0.0/16 (TCP 443, " in egress and "private: opted in" in egress
    assert "public IPv4" not in egress and "never private or reserved space" in egress
    assert "sandbox-isolation" not in out  # an opt-in is a choice, not a hole


def test_disabled_auth_and_policies_are_said_plainly(capsys: Any, write: Any) -> None:
    body = "kuberay:\n  rayVersion: '2.49.0'\n  auth: {mode: disabled}\n  networkPolicy: {enabled: false}\n"
    code, out, err, _ = check(capsys, write, body, "--set", "sandbox.networkPolicy.enabled=false")
    assert code == 0, err  # the lines whole: tests/golden/messages/check-report.txt
    ray_ports = summary_line(out, "Ray ports")
    assert "← anyone the CNI routes" in ray_ports and "NO token auth (kuberay.auth.mode: disabled)" in ray_ports
    assert "network    NetworkPolicy OFF: any pod may send tasks to the executors" in out
    # the analysis of the rendered policies says what that opens
    isolation = [line for line in out.splitlines() if line.startswith("! sandbox-isolation (error): Deployment "
                                                                      "team/exp-sandbox: ")]
    assert any("RayJob team/exp (head) on every port" in line for line in isolation), isolation


def test_attach_mode_tells_what_to_do_on_the_existing_cluster(capsys: Any, write: Any) -> None:
    code, out, err, _ = check(capsys, write, "", "--set", "launch.mode=attach", "--set",
                              "launch.attach.address=http://ray:8265")
    assert code == 0, err  # the lines whole: tests/golden/messages/check-report.txt
    ray_ports = summary_line(out, "Ray ports:")
    assert "the attached cluster is not covered" in ray_ports and "dockyard-k8s/fleet=sandbox" in ray_ports
    ingress = summary_line(out, "ingress")
    assert ":9090 ← no GPU pods (attach by address" in ingress and "sandbox.networkPolicy.ingressFrom" in ingress


ENDPOINT_PEER = ("{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: inference}}, "
                 "podSelector: {matchLabels: {dockyard-k8s/endpoint: llama}}}")


@pytest.mark.parametrize(("peer", "severity", "says"), [
    ("{namespaceSelector: {}}", "error", "untrusted pods may reach every pod of any namespace (every pod without a "
                                         "dockyard-k8s fleet label) on every port"),
    ("{namespaceSelector: {matchLabels: {team: ml}}}", "error", "untrusted pods may reach every pod of any "
                                                                "namespace"),
    ("{podSelector: {}}", "error", "untrusted pods may reach every pod of namespace team (every pod without a "
                                   "dockyard-k8s fleet label) on every port"),
    ("{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: inference}}}", "warning",
     "untrusted pods may reach every pod of namespace inference"),
])
def test_extra_egress_to_every_pod_is_computed_by_check_and_lint(capsys: Any, write: Any, peer: str, severity: str,
                                                                 says: str) -> None:
    """Pods live in private space, so a selector naming every pod of a
    namespace (or of the cluster) is a way into it, which check and lint must say."""
    body = f"sandbox:\n  networkPolicy:\n    extraEgress:\n      - to: [{peer}]\n"
    code, out, err, infra = check(capsys, write, body)
    assert code == 0, err
    assert f"! sandbox-isolation ({severity}): Deployment team/exp-sandbox: {says}" in out
    egress = next(line for line in out.splitlines() if line.startswith("  egress "))
    assert "never private" not in egress and "pods extraEgress names (1 rule)" in egress
    code = main(["lint", infra.replace(".infra.yaml", ".yaml"), "--infra", infra])
    lint_out = capsys.readouterr().out
    assert code == (1 if severity == "error" else 0)
    assert says in lint_out


def test_extra_egress_to_a_named_endpoint_is_no_finding(capsys: Any, write: Any) -> None:
    body = (f"sandbox:\n  networkPolicy:\n    extraEgress:\n      - to: [{ENDPOINT_PEER}]\n"
            "        ports: [{port: 8000}]\n")
    code, out, err, _ = check(capsys, write, body)
    assert code == 0, err
    assert "sandbox-isolation" not in out
    egress = summary_line(out, "egress")  # the line whole: tests/golden/messages/check-report.txt
    assert "pods extraEgress names (1 rule); no other private" in egress and "never cloud metadata" in egress


INGRESS_NGINX = ("kuberay:\n  networkPolicy:\n    extraIngress:\n      - from: [{namespaceSelector: {matchLabels: "
                 "{kubernetes.io/metadata.name: ingress-nginx}}}]\n        ports: [{port: 8265}]\n")


@pytest.mark.parametrize(("body", "severity", "says"), [
    ("kuberay:\n  spec: {headGroupSpec: {serviceType: LoadBalancer}}\n", "error",
     "untrusted pods may reach the GPU pod RayJob team/exp (head) from outside the cluster: its head Service is "
     "type LoadBalancer (headGroupSpec.serviceType), a public address on TCP 6379, 8265, 10001"),
    ("kuberay:\n  spec: {headGroupSpec: {enableIngress: true}}\n" + INGRESS_NGINX[len("kuberay:\n"):], "error",
     "untrusted pods may reach the GPU pod RayJob team/exp (head) from outside the cluster: KubeRay's dashboard "
     "Ingress (headGroupSpec.enableIngress) on TCP 80, 443 of the ingress controller's public load balancer, which "
     "its ingress admits (NetworkPolicy team/exp-gpu-ingress ingress[2])"),
    ("kuberay:\n  spec: {headGroupSpec: {enableIngress: true}}\n", "warning",
     "KubeRay's dashboard Ingress (headGroupSpec.enableIngress) routes the ingress controller's public load "
     "balancer to the GPU pod RayJob team/exp (head), which only its own ingress keeps closed"),
])
def test_a_public_entry_to_the_ray_head_is_a_path_from_the_sandbox(capsys: Any, write: Any, body: str,
                                                                   severity: str, says: str) -> None:
    """The sandbox's public egress reaches a LoadBalancer or an ingress
    controller's load balancer, which forwards to the head: policies between pods never see it."""
    code, out, err, infra = check(capsys, write, body)
    assert code == 0, err
    assert f"! sandbox-isolation ({severity}): Deployment team/exp-sandbox: {says}" in out
    code = main(["lint", infra.replace(".infra.yaml", ".yaml"), "--infra", infra])
    assert code == (1 if severity == "error" else 0) and says in capsys.readouterr().out
    # the sandbox locked down: no public egress, no path (the exposure itself stays service-exposure's)
    code, out, err, _ = check(capsys, write, body, "--set", "sandbox.networkPolicy.allowEgress=false")
    assert code == 0 and "sandbox-isolation" not in out, out


RAY_IMAGE = "infra:\n  namespace: team\n  image: rayproject/ray:{tag}\n"


def check_image(capsys: Any, write: Any, tag: str, body: str = "", *extra: str) -> tuple[int, str, str, str]:
    recipe = write("exp.yaml", "model: m\n")
    infra = write("exp.infra.yaml", RAY_IMAGE.format(tag=tag) + body)
    code = main(["check", recipe, "--infra", infra, *extra])
    out, err = capsys.readouterr()
    return code, out, err, infra


def test_the_ray_version_is_read_from_a_ray_images_tag(capsys: Any, write: Any) -> None:
    """kuberay.rayVersion defaulted to 2.52.1 whatever the image, so an older Ray image
    passed as token-authenticated and Ray ignored RAY_AUTH_MODE."""
    code, out, err, infra = check_image(capsys, write, "2.49.0-py311-gpu")
    assert code == 2 and out == ""
    first = err.splitlines()[0]
    assert first.startswith(f"{infra}:3:10: infra.image: is Ray 2.49.0 (its tag): Ray token authentication "
                            "(kuberay.auth.mode: token, the default) needs Ray >= 2.52.0"), first
    assert "older Ray ignores RAY_AUTH_MODE" in first
    code, out, err, _ = check_image(capsys, write, "2.53.0-py311-cpu")
    assert code == 0, err
    assert summary_line(out, "Ray ports").endswith("key auth_token), Ray 2.53.0 from the image tag")
    code, out, err, _ = check_image(capsys, write, "2.49.0", "kuberay:\n  auth: {mode: disabled}\n")
    assert code == 0, err  # no token auth asked for: an older Ray is fine


def test_a_two_part_ray_version_is_the_release_it_names(capsys: Any, write: Any) -> None:
    """``rayVersion: "2.52"`` (and an image tagged ``2.52``) is Ray 2.52.0, which has token
    authentication: compared as a tuple, (2, 52) < (2, 52, 0) refused it."""
    code, _, err, _ = check_image(capsys, write, "2.52-py311", "kuberay:\n  rayVersion: '2.52'\n")
    assert code == 0, err
    code, _, err, _ = check(capsys, write, "kuberay:\n  rayVersion: '2.52'\n")
    assert code == 0, err
    code, _, err, _ = check(capsys, write, "kuberay:\n  rayVersion: '2.51'\n")
    assert code == 2 and "kuberay.rayVersion: got '2.51': Ray token authentication" in err, err


def test_a_ray_version_that_contradicts_the_image_tag_is_refused(capsys: Any, write: Any) -> None:
    code, _, err, infra = check_image(capsys, write, "2.53.0-py311", "kuberay:\n  rayVersion: '2.52.1'\n")
    assert code == 2
    assert err.splitlines()[0].startswith(f"{infra}:5:15: kuberay.rayVersion: got '2.52.1', but infra.image is Ray "
                                          "2.53.0 (its tag)")


def test_an_image_whose_tag_does_not_say_is_assumed_and_checked_live(capsys: Any, write: Any) -> None:
    code, out, err, _ = check(capsys, write, "")
    assert code == 0, err  # the line whole: tests/golden/messages/check-report.txt
    ray_ports = summary_line(out, "Ray ports")
    assert "token auth (Secret exp-ray-auth, key auth_token)" in ray_ports
    assert "Ray 2.52.1 per kuberay.rayVersion" in ray_ports
    assert "`run` checks that the head refuses" in ray_ports
