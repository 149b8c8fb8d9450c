"""`validate` applies the API server's own limits at the manifest line: int32/int64 fields and
env var names (issue 16 item 5; `check` reports the same at the infra key)."""

from __future__ import annotations

from dockyard_k8s.cli import main

MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: x}
spec:
  replicas: 3000000000
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec:
      terminationGracePeriodSeconds: 1000000000000000000000000000000
      securityContext: {runAsUser: 1000}
      containers:
        - name: c
          image: x:1
          env: [{name: 1BAD, value: a}, {name: GOOD_1.x-y, value: b}]
          readinessProbe: {periodSeconds: 9999999999, tcpSocket: {port: 80}}
---
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: j}
spec:
  entrypoint: python x.py
  activeDeadlineSeconds: 2147483648
  rayClusterSpec:
    headGroupSpec: {rayStartParams: {}, template: {spec: {containers: [{name: h, image: "r:1"}]}}}
    workerGroupSpecs:
      - {groupName: w, replicas: 1, minReplicas: 0, maxReplicas: 4294967296, rayStartParams: {},
         template: {spec: {containers: [{name: w, image: "r:1"}]}}}
"""


def test_numbers_and_env_names_the_api_server_refuses(tmp_path, capsys):
    path = tmp_path / "m.yaml"
    path.write_text(MANIFEST)
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out  # the whole messages: tests/golden/messages/validate.txt
    said = {}  # (line, object, field) -> what is wrong
    for line in out.splitlines():
        where, obj, field, message = line.split(": ", 3)
        said[(where.removeprefix(f"{path}:"), obj, field)] = message
    spec = "spec.template.spec"
    assert said[("5", "Deployment x", "spec.replicas")].startswith(f"got 3000000000, expected at most {2**31 - 1} (")
    assert said[("10", "Deployment x", f"{spec}.terminationGracePeriodSeconds")].startswith(
        f"got {10**30}, expected at most {2**63 - 1} (")
    assert said[("15", "Deployment x", f"{spec}.containers[0].env[0].name")].startswith("env name '1BAD' is not valid")
    assert "GOOD_1.x-y" not in out and "runAsUser" not in out
    assert said[("16", "Deployment x", f"{spec}.containers[0].readinessProbe.periodSeconds")].startswith(
        f"got 9999999999, expected at most {2**31 - 1} (")
    assert f"{path}:23: RayJob j: spec.activeDeadlineSeconds: got 2147483648" in out
    assert "spec.rayClusterSpec.workerGroupSpecs[0].maxReplicas: got 4294967296" in out
