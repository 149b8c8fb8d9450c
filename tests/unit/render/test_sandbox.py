from dockyard_k8s.render.meta import FLEET_LABEL, RUN_LABEL


def deployment(objs):
    return objs["Deployment", "exp-sandbox"]


def pod(objs):
    return deployment(objs)["spec"]["template"]["spec"]


def test_sandbox_objects_in_apply_order_network_policy_first(render):
    _, objects = render()
    kinds = [(o["kind"], o["metadata"]["name"]) for o in objects[:6]]
    assert kinds == [("NetworkPolicy", "exp-gpu-ingress"), ("NetworkPolicy", "exp-sandbox"),
                     ("ServiceAccount", "exp-sandbox"), ("Deployment", "exp-sandbox"), ("Service", "exp-sandbox"),
                     ("PodDisruptionBudget", "exp-sandbox")]


def test_hardening_baseline_and_untrusted_code_extras(render):
    objs, _ = render()
    spec = pod(objs)
    (container,) = spec["containers"]
    assert container["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                            "seccompProfile": {"type": "RuntimeDefault"}}
    assert spec["automountServiceAccountToken"] is False
    assert spec["enableServiceLinks"] is False
    assert spec["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"} in container["env"]
    assert spec["priorityClassName"] == "gpu-high"
    assert spec["imagePullSecrets"] == [{"name": "pull"}]
    assert "nvidia.com/gpu" not in container["resources"]["requests"]


def test_default_requests_and_limits_default_to_requests(render):
    objs, _ = render()
    res = pod(objs)["containers"][0]["resources"]
    assert res == {"requests": {"cpu": "1", "memory": "2Gi", "ephemeral-storage": "10Gi"},
                   "limits": {"cpu": "1", "memory": "2Gi", "ephemeral-storage": "10Gi"}}


def test_limits_raise_the_burst_ceiling_only(render):
    objs, _ = render("sandbox:\n  resources:\n    cpuLimit: 4\n    memoryLimit: 8Gi\n")
    res = pod(objs)["containers"][0]["resources"]
    assert res["requests"]["cpu"] == "1" and res["limits"]["cpu"] == "4"
    assert res["requests"]["memory"] == "2Gi" and res["limits"]["memory"] == "8Gi"


def test_opt_ins_non_root_and_read_only_root_with_writable_scratch(render):
    objs, _ = render("sandbox:\n  security:\n    runAsNonRoot: true\n    runAsUser: 1000\n"
                     "    readOnlyRootFilesystem: true\n")
    spec = pod(objs)
    ctx = spec["containers"][0]["securityContext"]
    assert ctx["runAsNonRoot"] is True and ctx["runAsUser"] == 1000 and ctx["readOnlyRootFilesystem"] is True
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["containers"][0]["volumeMounts"] == [{"name": "scratch-0", "mountPath": "/tmp"},
                                                      {"name": "scratch-1", "mountPath": "/workspace"}]
    assert spec["volumes"] == [{"name": "scratch-0", "emptyDir": {}}, {"name": "scratch-1", "emptyDir": {}}]


def test_network_policy_ingress_from_the_runs_ray_pods_only_on_executor_port(render):
    objs, _ = render()
    np = objs["NetworkPolicy", "exp-sandbox"]["spec"]
    assert np["podSelector"] == {"matchLabels": {FLEET_LABEL: "sandbox", RUN_LABEL: "exp"}}
    assert np["policyTypes"] == ["Ingress", "Egress"]
    assert np["ingress"] == [{"from": [{"podSelector": {
        "matchLabels": {RUN_LABEL: "exp"},
        "matchExpressions": [{"key": FLEET_LABEL, "operator": "In", "values": ["head", "trainer", "inference"]}]}}],
        "ports": [{"protocol": "TCP", "port": 9090}]}]


def test_extra_sources_are_narrowed_to_non_sandbox_pods(render):
    objs, _ = render("sandbox:\n  networkPolicy:\n    ingressFrom:\n"
                     "      - namespaceSelector: {matchLabels: {team: eval}}\n"
                     "      - podSelector: {matchLabels: {app: router}}\n")
    peers = objs["NetworkPolicy", "exp-sandbox"]["spec"]["ingress"][0]["from"]
    not_sandbox = {"key": FLEET_LABEL, "operator": "NotIn", "values": ["sandbox"]}
    assert peers[1:] == [
        {"namespaceSelector": {"matchLabels": {"team": "eval"}}, "podSelector": {"matchExpressions": [not_sandbox]}},
        {"podSelector": {"matchLabels": {"app": "router"}, "matchExpressions": [not_sandbox]}},
    ]


def test_attach_mode_admits_the_attached_clusters_pods(render):
    objs, _ = render(sets=["launch.mode=attach", "launch.attach.cluster=shared"])
    (peer,) = objs["NetworkPolicy", "exp-sandbox"]["spec"]["ingress"][0]["from"]
    assert peer["podSelector"]["matchLabels"] == {"ray.io/cluster": "shared"}
    objs, _ = render(sets=["launch.mode=attach", "launch.attach.address=http://ray:8265"])
    assert objs["NetworkPolicy", "exp-sandbox"]["spec"]["ingress"] == []  # nobody known: nobody admitted


def test_open_egress_is_the_public_internet_without_port_53_and_dns_goes_to_cluster_dns(render):
    objs, _ = render()
    dns, public = objs["NetworkPolicy", "exp-sandbox"]["spec"]["egress"]
    assert dns == {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                           "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
                   "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}
    assert public["to"] == [  # IPv4 only: IPv6 pods have global addresses (issue 22 item 25)
        {"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
                                                     "100.64.0.0/10", "198.18.0.0/15", "240.0.0.0/4",
                                                     "169.254.0.0/16", "168.63.129.16/32"]}},
    ]
    assert {(p["protocol"], p["port"], p["endPort"]) for p in public["ports"]} == {
        ("TCP", 1, 52), ("TCP", 54, 65535), ("UDP", 1, 52), ("UDP", 54, 65535)}


def test_cluster_dns_is_configurable(render):
    objs, _ = render(infra="clusterDns: {namespace: openshift-dns, podLabels: {dns.operator.openshift.io/"
                           "daemonset-dns: default}}")
    (peer,) = objs["NetworkPolicy", "exp-sandbox"]["spec"]["egress"][0]["to"]
    assert peer == {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "openshift-dns"}},
                    "podSelector": {"matchLabels": {"dns.operator.openshift.io/daemonset-dns": "default"}}}


def test_locked_down_egress_allows_only_dns_and_listed_cidrs_with_their_ports(render):
    objs, _ = render("sandbox:\n  networkPolicy:\n    allowEgress: false\n    blockedEgressCidrs: [140.82.115.0/24]\n"
                     "    allowedEgressCidrs:\n      - 140.82.112.0/20\n      - 0.0.0.0/0\n"
                     "      - {cidr: 10.30.0.0/16, ports: [443, {port: 8000, endPort: 8100, protocol: TCP}], "
                     "private: true}\n")
    np = objs["NetworkPolicy", "exp-sandbox"]
    egress = np["spec"]["egress"]
    assert egress[1:] == [
        {"to": [{"ipBlock": {"cidr": "140.82.112.0/20", "except": ["140.82.115.0/24"]}}]},
        {"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
                                                             "100.64.0.0/10", "198.18.0.0/15", "240.0.0.0/4",
                                                             "169.254.0.0/16", "168.63.129.16/32",
                                                             "140.82.115.0/24"]}}]},
        {"to": [{"ipBlock": {"cidr": "10.30.0.0/16"}}],
         "ports": [{"protocol": "TCP", "port": 443}, {"protocol": "TCP", "port": 8000, "endPort": 8100}]},
    ]
    assert np["metadata"]["annotations"] == {"dockyard-k8s/private-egress": "10.30.0.0/16"}


def test_runtime_class_and_user_namespace_opt_ins(render):
    objs, _ = render()
    assert "runtimeClassName" not in pod(objs) and "hostUsers" not in pod(objs)  # runnable on a stock cluster
    objs, _ = render("sandbox:\n  runtimeClassName: gvisor\n  hostUsers: false\n")
    assert pod(objs)["runtimeClassName"] == "gvisor" and pod(objs)["hostUsers"] is False


def test_no_egress_at_all_leaves_dns_only(render):
    objs, _ = render("sandbox:\n  networkPolicy:\n    allowEgress: false\n")
    assert len(objs["NetworkPolicy", "exp-sandbox"]["spec"]["egress"]) == 1


def test_service_and_pdb(render):
    objs, _ = render()
    svc = objs["Service", "exp-sandbox"]["spec"]
    assert svc["type"] == "ClusterIP"
    assert svc["ports"] == [{"name": "http", "port": 9090, "targetPort": "http", "protocol": "TCP"}]
    assert svc["selector"] == deployment(objs)["spec"]["selector"]["matchLabels"]
    pdb = objs["PodDisruptionBudget", "exp-sandbox"]["spec"]
    assert pdb == {"maxUnavailable": 1, "selector": {"matchLabels": svc["selector"]}}


def test_topology_spread_gets_the_pool_selector_by_default(render):
    objs, _ = render("sandbox:\n  topologySpreadConstraints:\n    - maxSkew: 1\n"
                     "      topologyKey: kubernetes.io/hostname\n      whenUnsatisfiable: ScheduleAnyway\n")
    (tsc,) = pod(objs)["topologySpreadConstraints"]
    assert tsc["labelSelector"] == deployment(objs)["spec"]["selector"]


def test_every_piece_can_be_dropped(render):
    objs, _ = render("sandbox:\n  networkPolicy: {enabled: false}\n  pdb: {enabled: false}\n"
                     "  security: {enabled: false}\n")
    assert ("NetworkPolicy", "exp-sandbox") not in objs and ("PodDisruptionBudget", "exp-sandbox") not in objs
    assert "securityContext" not in pod(objs)["containers"][0]
    objs, _ = render("sandbox:\n  enabled: false\n")
    assert not [k for k in objs if k[1] == "exp-sandbox"]


def test_token_can_be_mounted_only_on_request(render):
    objs, _ = render("sandbox:\n  security:\n    automountServiceAccountToken: true\n")
    assert pod(objs)["automountServiceAccountToken"] is True


def test_extra_egress_names_pods_but_never_a_ray_pod_or_an_executor(render):
    objs, _ = render("sandbox:\n  networkPolicy:\n    extraEgress:\n"
                     "      - to: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: inference}},\n"
                     "              podSelector: {matchLabels: {dockyard-k8s/endpoint: llama}}}]\n"
                     "        ports: [{port: 8000}]\n")
    rule = objs["NetworkPolicy", "exp-sandbox"]["spec"]["egress"][-1]
    assert rule["ports"] == [{"port": 8000}]
    (peer,) = rule["to"]
    assert peer["podSelector"] == {"matchLabels": {"dockyard-k8s/endpoint": "llama"}, "matchExpressions": [
        {"key": FLEET_LABEL, "operator": "NotIn", "values": ["head", "trainer", "inference", "submitter", "sandbox"]},
        {"key": "ray.io/cluster", "operator": "DoesNotExist"}]}  # any RayCluster's pod (issue 22 item 21)


def test_gpu_pods_get_no_api_token_but_an_autoscaling_head_does(render):
    objs, _ = render(sets=["launch.mode=bringup"])
    spec = objs["RayCluster", "exp"]["spec"]
    pods = [spec["headGroupSpec"]["template"]["spec"]] + [g["template"]["spec"] for g in spec["workerGroupSpecs"]]
    assert [p["automountServiceAccountToken"] for p in pods] == [False, False, False]
    objs, _ = render("kuberay:\n  serviceAccountName: trainer-sa\n  spec: {enableInTreeAutoscaling: true}\n",
                     sets=["launch.mode=bringup"])
    spec = objs["RayCluster", "exp"]["spec"]
    pods = [spec["headGroupSpec"]["template"]["spec"]] + [g["template"]["spec"] for g in spec["workerGroupSpecs"]]
    assert [p["automountServiceAccountToken"] for p in pods] == [True, False, False]
    assert {p["serviceAccountName"] for p in pods} == {"trainer-sa"}


def test_the_pool_runs_as_a_dedicated_empty_service_account(render):
    """EKS Pod Identity and IRSA (and GKE/Azure workload identity) hand cloud
    credentials to pods by ServiceAccount, whatever automountServiceAccountToken says: the
    executors never run as the namespace's default one."""
    objs, _ = render()
    sa = objs["ServiceAccount", "exp-sandbox"]
    assert sa["automountServiceAccountToken"] is False
    assert "annotations" not in sa["metadata"] and sa["metadata"]["labels"][RUN_LABEL] == "exp"
    assert set(sa) == {"apiVersion", "kind", "metadata", "automountServiceAccountToken"}  # no secrets, no pull secrets
    assert pod(objs)["serviceAccountName"] == "exp-sandbox"
    objs, _ = render("sandbox:\n  serviceAccountName: executors\n")  # an existing, vetted account
    assert ("ServiceAccount", "exp-sandbox") not in objs and pod(objs)["serviceAccountName"] == "executors"
