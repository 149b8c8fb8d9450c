from dockyard_k8s.render.meta import FLEET_LABEL, RUN_LABEL


def deployment(objs):
    return objs["Deployment", "exp-sandbox"]


def pod(objs):
    return deployment(objs)["spec"]["template"]["spec"]


def test_sandbox_objects_in_apply_order_network_policy_first(render):
    _, objects = render()
    kinds = [(o["kind"], o["metadata"]["name"]) for o in objects[:4]]
    assert kinds == [("NetworkPolicy", "exp-sandbox"), ("Deployment", "exp-sandbox"), ("Service", "exp-sandbox"),
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


def test_network_policy_ingress_namespace_only_on_executor_port(render):
    objs, _ = render()
    np = objs["NetworkPolicy", "exp-sandbox"]["spec"]
    assert np["podSelector"] == {"matchLabels": {FLEET_LABEL: "sandbox", RUN_LABEL: "exp"}}
    assert np["policyTypes"] == ["Ingress", "Egress"]
    assert np["ingress"] == [{"from": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": 9090}]}]


def test_open_egress_still_blocks_cloud_metadata(render):
    objs, _ = render()
    dns, rest = objs["NetworkPolicy", "exp-sandbox"]["spec"]["egress"]
    assert dns["ports"] == [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
    assert rest == {"to": [
        {"ipBlock": {"cidr": "0.0.0.0/0", "except": ["169.254.0.0/16", "100.100.100.200/32"]}},
        {"ipBlock": {"cidr": "::/0", "except": ["fd00:ec2::254/128"]}},
    ]}


def test_locked_down_egress_allows_only_dns_and_listed_cidrs(render):
    objs, _ = render("sandbox:\n  networkPolicy:\n    allowEgress: false\n"
                     "    allowedEgressCidrs: [140.82.112.0/20, 169.254.0.0/16, 0.0.0.0/0]\n")
    egress = objs["NetworkPolicy", "exp-sandbox"]["spec"]["egress"]
    assert len(egress) == 2
    assert egress[1]["to"] == [
        {"ipBlock": {"cidr": "140.82.112.0/20"}},
        {"ipBlock": {"cidr": "169.254.0.0/16"}},  # explicitly allowed: the user's choice
        {"ipBlock": {"cidr": "0.0.0.0/0", "except": ["169.254.0.0/16", "100.100.100.200/32"]}},
    ]


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
