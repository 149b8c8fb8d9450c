"""What the command line prints for bad input, byte for byte: tests/golden/messages/<class>.txt holds,
for each case of a class of errors, the command, the files it reads (beside a plain recipe r.yaml and
infra file i.yaml), the exit code and every line printed. Regenerate with `make golden` and read the
diff: a changed message is a changed interface.

Tests elsewhere assert one behaviour each (a value is refused, a key is named); the wording of
whole messages lives here.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from support.cli import run_cli
from support.golden import compare
from support.paths import REPO

EXPECTED = Path(__file__).parent / "messages"
RECIPE = "model: m\noptimizer:\n  lr: 1.0e-6\nenv:\n  code:\n    sandbox_urls: [x]\n"
IMG = "infra:\n  image: reg.example.com/img:1.0\n"
BASE = {"r.yaml": RECIPE, "i.yaml": IMG}
CHECK = "check r.yaml -f i.yaml"
P5 = "      node.kubernetes.io/instance-type: p5.48xlarge\n"
HF = "hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7"  # shaped like a Hugging Face token
EX = "examples"  # the repository's, as a user in its root types them
Files = dict[str, str | bytes]
POOLS = ("plan:\n  nodePools: [{name: gpu, instanceType: p4de.24xlarge, count: 1}, "
         "{name: cpu, instanceType: m6i.8xlarge, count: 2}]\n")
QUEUED = "  kueue:\n    queueName: q\n"
KUEUE = "apiVersion: kueue.x-k8s.io/v1beta2\n"
TOPOLOGY = (f"{KUEUE}kind: Topology\nmetadata: {{name: gpus}}\nspec:\n  levels: [{{nodeLabel: "
            "cloud.google.com/gce-topology-block}, {nodeLabel: kubernetes.io/hostname}]\n---\n")


def queues(gpus: str = "16", topology: str = "") -> str:
    """--kueue FILE: one flavor (of Topology gpus when ``topology``), ClusterQueue team-a, LocalQueue q."""
    flavor = f"spec: {{topologyName: {topology}}}\n" if topology else ""
    return (f"{topology and TOPOLOGY}{KUEUE}kind: ResourceFlavor\nmetadata: {{name: default-flavor}}\n{flavor}"
            f"---\n{KUEUE}kind: ClusterQueue\nmetadata: {{name: team-a}}\n"
            "spec:\n  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [cpu, memory, nvidia.com/gpu]\n"
            "    flavors:\n    - name: default-flavor\n      resources:\n      - {name: cpu, nominalQuota: 200}\n"
            f"      - {{name: memory, nominalQuota: 2Ti}}\n      - {{name: nvidia.com/gpu, nominalQuota: {gpus}}}\n"
            f"---\n{KUEUE}kind: LocalQueue\nmetadata: {{name: q, namespace: default}}\n"
            "spec: {clusterQueue: team-a}\n")


# lint's paths into a GPU pod from outside: a sandbox whose egress admits public addresses, a LoadBalancer
# and an Ingress (whose controller a policy admits) in front of the GPU Job
PUBLIC_PATHS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: sandbox, namespace: team}
spec:
  selector: {matchLabels: {app: sandbox}}
  template:
    metadata: {labels: {app: sandbox, dockyard-k8s/fleet: sandbox}}
    spec:
      containers: [{name: app, image: reg/app:1.0}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: team}
spec:
  template:
    metadata: {labels: {app: train}}
    spec:
      restartPolicy: Never
      containers: [{name: trainer, image: reg/train:1.0, resources: {limits: {nvidia.com/gpu: 1}}}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: all, namespace: team}
spec:
  podSelector: {}
  policyTypes: [Ingress, Egress]
  egress:
  - to:
    - ipBlock:
        cidr: 0.0.0.0/0
        except: [10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, 198.18.0.0/15, 240.0.0.0/4,
                 169.254.0.0/16, 168.63.129.16/32]
    ports: [{port: 443}, {port: 8080}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: from-nginx, namespace: team}
spec:
  podSelector: {matchLabels: {app: train}}
  policyTypes: [Ingress]
  ingress:
  - from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ingress-nginx}}}]
---
apiVersion: v1
kind: Service
metadata: {name: train-lb, namespace: team}
spec: {type: LoadBalancer, selector: {app: train}, ports: [{port: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: train, namespace: team}
spec: {selector: {app: train}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: train, namespace: team}
spec:
  rules:
  - http:
      paths: [{path: /, pathType: Prefix, backend: {service: {name: train, port: {number: 80}}}}]
"""
# rules on a StatefulSet's Service, a RayJob's cleanup and deadline, EFA without a GPU
WORKLOAD_RULES = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: train, namespace: team}
spec:
  serviceName: train-svc
  replicas: 2
  selector: {matchLabels: {app: t}}
  template:
    metadata: {labels: {app: t}}
    spec:
      containers: [{name: c, image: reg/train:1.0, resources: {limits: {vpc.amazonaws.com/efa: 1}}}]
---
apiVersion: v1
kind: Service
metadata: {name: train-svc, namespace: team}
spec: {clusterIP: 10.0.0.1, selector: {app: t}, ports: [{port: 80}]}
---
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: r, namespace: team}
spec:
  shutdownAfterJobFinishes: false
  activeDeadlineSeconds: 7200
  preRunningDeadlineSeconds: 120
  rayClusterSpec:
    headGroupSpec:
      template:
        spec:
          containers: [{name: head, image: reg/ray:2.53.0}]
"""


EXEC = "    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n"


def kubeconfig(cluster: str, user: str) -> str:
    """One context: cluster c (``cluster`` more of its keys) and user me (``user`` its body)."""
    return ("apiVersion: v1\nkind: Config\ncurrent-context: here\ncontexts:\n"
            "- {name: here, context: {cluster: c, user: me}}\n"
            f"clusters:\n- name: c\n  cluster: {{server: 'https://k8s.test:6443'{cluster}}}\n"
            f"users:\n- name: me\n  user:\n{user}")


def serve(extra: str) -> Files:
    """s.serve.yaml: an endpoint of a hub model, with ``extra`` under serve:."""
    return {"s.serve.yaml": "infra:\n  namespace: llama\nserve:\n  model: {id: meta-llama/Meta-Llama-3-8B-Instruct}\n"
                            + extra}


def infra(extra: str, **files: str | bytes) -> Files:
    """i.yaml with ``extra`` after the image (more files by name: ``i_yaml=`` replaces it)."""
    return {"i.yaml": IMG + extra, **{k.replace("_", "."): v for k, v in files.items()}}


# (what the case shows, the command line after `dockyard-k8s`, files besides BASE)
CASES: dict[str, list[tuple[str, str, Files]]] = {
    "config": [
        ("unknown keys with a suggestion, types, all at once", CHECK, infra(
            "  nmespace: a\nkuberay:\n  trainer:\n    replica: 2\n    cpu: 4 cores\nlaunch:\n  mode: rayjobs\n"
            "sandbox:\n  replicas: -1\n  networkPolicy:\n    allowedEgressCidrs: [10.0.0.1/8]\n")),
        ("a key written under the wrong parent says where it belongs", CHECK, infra(
            "launch:\n  namespace: a\nimage: r/i:1\n")),
        ("a YAML 1.1 boolean where a string goes", CHECK, infra("kuberay:\n  trainer:\n    nodeSelector:\n"
                                                                "      gpu: yes\n")),
        ("a version or a label value YAML reads as a number or a boolean: quote it", CHECK, infra(
            "kuberay:\n  rayVersion: 2.50\n  trainer:\n    nodeSelector:\n      fast: true\n      gen: 5\n")),
        ("a byte unit where a quantity goes says how Kubernetes spells it", CHECK, infra(
            "kuberay:\n  trainer:\n    memory: 1000GB\n    shmSize: 64GiB\n")),
        ("the image is required", CHECK, {"i.yaml": "infra:\n  namespace: x\n"}),
        ("an empty infra file", "check r.yaml -f e.infra.yaml", {"e.infra.yaml": ""}),
        ("no infra file beside the recipe", "check tiny.yaml", {"tiny.yaml": "a: 1\n"}),
        ("the top level is not a mapping", CHECK, {"i.yaml": "- a\n- b\n"}),
        ("a file that is not there", "check nope.yaml -f i.yaml", {}),
        ("a mistyped recipe: the near name, and nothing about its infra file", "check grpo-swe.yaml",
         {"grpo_swe.yaml": "a: 1\n"}),
        ("not UTF-8", CHECK, {"i.yaml": b"infra:\n  image: caf\xe9\n"}),
        ("not YAML", CHECK, {"i.yaml": "infra:\n  image: [x\n"}),
        ("a tab for indentation", CHECK, {"i.yaml": IMG + "kuberay:\n\ttrainer: {}\n"}),
        ("a key written twice", CHECK, {"i.yaml": IMG + "infra:\n  namespace: a\n"}),
        ("a missing parent", "check r.yaml -f c.yaml", {"c.yaml": "defaults: nope.yaml\n" + IMG}),
        ("a defaults cycle", "check r.yaml -f a.yaml", {"a.yaml": "defaults: b.yaml\n" + IMG,
                                                         "b.yaml": "defaults: a.yaml\n"}),
        ("keys that moved", CHECK, infra("  networkPolicy:\n    operatorPodLabels: {app: kuberay}\n"
                                         "    extraIngress: []\n")),
        ("a key that moved, in --set", CHECK + " --set infra.networkPolicy.extraIngress=[]", {}),
        *(("an infra spec given as the recipe", argv, {"x.infra.yaml": "# team infra\ninfra:\n  image: r/i:1\n"
                                                                       "kuberay:\n  trainer: {gpus: 1}\n"})
          for argv in ("check x.infra.yaml", "check x.infra.yaml -f x.infra.yaml")),
        ("an empty recipe", CHECK, {"r.yaml": "# nothing yet\n"}),
        ("an unterminated variable", CHECK, {"i.yaml": "infra:\n  image: ghcr.io/x/y:${TAG\n"}),
        ("an unset variable's empty default", CHECK, {"i.yaml": "infra:\n  image: ghcr.io/x/y:${TAG-}\n"}),
        ("a recipe that is not UTF-8", "check bad.yaml -f i.yaml", {"bad.yaml": b"a: caf\xe9\n"}),
        ("a parent that is not UTF-8", "check r.yaml -f c.yaml", {"c.yaml": "defaults: bad.yaml\n",
                                                                  "bad.yaml": b"infra:\n  image: caf\xe9\n"}),
        ("user defaults that are not UTF-8", "DOCKYARD_K8S_DEFAULTS=bad.yaml " + CHECK,
         {"bad.yaml": b"infra:\n  image: caf\xe9\n"}),
        ("YAML 1.1 surprises: an octal, a base-60 and an underscored number, a boolean value and key", CHECK,
         infra("kuberay:\n  trainer:\n    env: {A: 0755, B: 1:30, C: 1_000, D: no}\n    nodeSelector:\n"
               "      on: x\n")),
        ("an unset variable, a variable inside a default", CHECK, {"i.yaml": (
            "infra:\n  image: reg.example.com/img:${TAG_NOT_SET}\nkuberay:\n  head:\n    env:\n"
            "      X: ${RUN_TAG:-${BASE_TAG}}\n      Y: x-${RUN_TAG-${BASE_TAG}}\n")}),
        ("an unknown platform and instance type", CHECK, infra("  platform: gke\n  instanceType: p9.huge\n")),
        *((f"an output path that cannot be written: {name}", f"{command} r.yaml -f i.yaml {flag}",
           {"f.txt": "x\n", "out/f.txt": "x\n"}) for name, command, flag in [
            ("a missing directory", "render", "--output-file nodir/run.yaml"),
            ("a missing directory, for check's resolved config", "check", "--output-file nodir/a.yaml"),
            ("a file given as a directory", "render", "--output-dir f.txt"),
            ("a directory under a file", "render", "--output-dir f.txt/x"),
            ("a directory given as a file", "render", "--output-file out")]),
    ],
    "overrides": [
        ("keys the recipe lacks, with the close ones", "check r.yaml -f i.yaml lr=1 +model=x optimzer.lr=1 "
                                                       "~optimizer.lrr", {}),
        ("an infra key after the recipe", CHECK + " kuberay.trainer.replicas=4", {}),
        ("a config group's option", CHECK + " model=big +model=big ++model=big ~model model@policy=big",
         {"r.yaml": "defaults:\n  - model: small\n  - _self_\ntrainer:\n  lr: 1\n", "model/small.yaml": "size: 1\n",
          "model/big.yaml": "size: 9\n"}),
        ("what Hydra's grammar refuses", CHECK + " +++a=1 a==5 model=b=c optimizer.lr=1,2 'a.b c=1' optimizer[0]=1 =1",
         {}),
        ("a deletion whose value differs", CHECK + " ~optimizer.lr=2", {}),
        ("credentials by value", CHECK + f" +logging.wandb_api_key=0123456789abcdef ++policy.hub={HF}", {}),
        ("credentials written in the recipe", CHECK, {"r.yaml": RECIPE + f"logging:\n  wandb_api_key: abc123def\n"
                                                                         f"  hub: {HF}\n"}),
        ("with the rendered objects' problems", CHECK + " b=1", infra(f"launch:\n  name: {'a' * 48}\n")),
    ],
    "layering": [
        ("not KEY=VALUE, a wrong type", CHECK + " --set nokey --set sandbox.replicas=many", {}),
        ("a recipe key in --set", CHECK + " --set optimizer.lr=1e-5", {}),
        ("--set-file of a missing file", CHECK + " --set-file launch.entrypoint=/nonexistent", {}),
        ("credentials by value", CHECK + f" --set kuberay.trainer.env.HF_TOKEN={HF} "
                                         "--set-string sandbox.env.GITHUB_TOKEN=ghp_" + "x" * 36
                                         + f" --set 'launch.entrypoint=python train.py --hf-token {HF}'", {}),
        ("a credential in a file's env", CHECK, infra("kuberay:\n  head:\n    env:\n      WANDB_API_KEY: abc123\n")),
        ("credentials named in the entrypoint", CHECK + " --set 'launch.entrypoint=WANDB_API_KEY=abc123 python "
                                                        "train.py --password=abc123 {recipe} logging.api_key=abc123'",
         {}),
        ("the API server's limits", CHECK + " --set kuberay.trainer.replicas=3000000000 "
                                            "--set kuberay.trainer.env.1BAD=x "
                                            "--set sandbox.replicas=1000000000000000000000000000000 "
                                            "--set 'infra.labels.Bad Label=rl' --set 'infra.labels.team=not ok' "
                                            "--set 'kuberay.trainer.nodeSelector.pool=a b' "
                                            "--set infra.imagePullSecrets=[Bad_Secret]", {}),
        ("values that would fail on the cluster", CHECK + " --set launch.attach.address=ray-head:8265 --set "
                                                          "infra.storage.mountPath=data --set ncclTest.maxBytes=1GB "
                                                          "--set infra.imagePull.pauseImage=Registry.k8s.io/Pause "
                                                          "--set launch.submitter.memoryLimit=100Mi", {}),
        ("image references", CHECK + " --set-string sandbox.image=ghcr.io/x/Y:1 --set-string 'launch.submitter.image=x "
                                     "y:1' --set-string ncclTest.image=reg/img: --set-string "
                                     "infra.imagePull.pauseImage=reg/img@sha256:abc", {}),
        ("an image reference starting with '-'", CHECK + " --set-string sandbox.image=-bad/img:1", {}),
        ("a limit below its request, both layers named", CHECK + " --set kuberay.trainer.memory=30Gi "
                                                                 "--set kuberay.trainer.memoryLimit=24Gi", {}),
    ],
    "kubeconfig": [(name, "status r.yaml -f i.yaml --kubeconfig kubeconfig", {"kubeconfig": text}) for name, text in [
        ("empty", ""),
        ("a top-level list", "- a\n- b\n"),
        ("not YAML", "clusters: [\n"),
        ("clusters as a mapping", "clusters: {a: 1}\n"),
        ("an entry that is not a mapping", "clusters:\n- just-a-name\n"),
        ("an entry without a name", "contexts:\n- context: {cluster: c}\n"),
        ("a context without its body", "current-context: x\ncontexts:\n- name: x\n  context:\n"),
        ("an unknown current context", "current-context: prod\ncontexts:\n- {name: dev, context: {cluster: c}}\n"
                                       "clusters:\n- {name: c, cluster: {server: 'https://x'}}\n"),
        ("an unknown cluster", "current-context: dev\ncontexts:\n- {name: dev, context: {cluster: gone, user: me}}\n"
                               "users:\n- {name: me, user: {token: t}}\n"),
        ("an unknown user", "current-context: dev\ncontexts:\n- {name: dev, context: {cluster: c, user: nobody}}\n"
                            "clusters:\n- {name: c, cluster: {server: 'https://x'}}\n"),
        ("no server", "current-context: dev\ncontexts:\n- {name: dev, context: {cluster: c}}\n"
                      "clusters:\n- {name: c, cluster: {certificate-authority-data: eA==}}\n"),
        ("no current context", "contexts:\n- {name: dev, context: {cluster: c}}\n"),
        ("a wrong type", "current-context: dev\ncontexts:\n- {name: dev, context: {cluster: c}}\nclusters:\n"
                         "- name: c\n  cluster:\n    server: https://x\n    insecure-skip-tls-verify: 'yes'\n"),
    ]] + [(name, "status r.yaml -f i.yaml --kubeconfig kubeconfig", {"kubeconfig": kubeconfig(cluster, user)})
           for name, cluster, user in [
        ("a TLS file that is not there", ", certificate-authority: ca.crt", "    token: t\n"),
        ("an exec plugin that fails", "", EXEC + "      command: sh\n"
                                                 "      args: [-c, 'echo expired token >&2; exit 254']\n"),
        ("an exec plugin that is not installed", "", EXEC + "      command: aws-not-installed\n"
                                                            "      installHint: brew install awscli\n"),
    ]],
    "run-rules": [
        ("attach mode without a target", CHECK, infra("launch:\n  mode: attach\n")),
        ("attach mode with two targets", CHECK, infra("launch:\n  mode: attach\n  attach:\n    cluster: shared\n"
                                                      "    address: http://ray.example.com:8265\n")),
        ("an attach target outside attach mode", CHECK, infra("launch:\n  attach: {cluster: shared}\n")),
        ("KubeRay's rules, at the config key", CHECK, infra(f"launch:\n  name: {'a' * 48}\n  suspend: true\n"
                                                            "  shutdownAfterJobFinishes: false\n")),
        ("a run name too long from the recipe file name",
         "check a-very-long-recipe-name-that-makes-the-rayjob-name-too-long.yaml -f i.yaml",
         {"a-very-long-recipe-name-that-makes-the-rayjob-name-too-long.yaml": "a: 1\n"}),
        ("launch.mode job: one pod on one node", f"check {EX}/grpo_swe.yaml -f {EX}/grpo_swe.infra.yaml "
                                                 "--set launch.mode=job", {}),
        ("launch.mode job: sizes add up", f"check {EX}/grpo_swe.yaml -f {EX}/eks_p5.infra.yaml --set launch.mode=job "
                                          "--set infra.instanceType=p4de.24xlarge --set kuberay.trainer.replicas=1 "
                                          "--set kuberay.inference.replicas=0 --set kuberay.head.cpu=8", {}),
        ("launch.mode job: one node label, two values", CHECK, infra(
            "launch: {mode: job}\nkuberay:\n  inference: {replicas: 0}\n  head:\n    nodeSelector: {pool: a}\n"
            "  trainer:\n    nodeSelector: {pool: b}\n")),
        ("launch.mode job: one ray start parameter, two values (the one pod starts one Ray node)", CHECK, infra(
            "launch: {mode: job}\nkuberay:\n  head:\n    rayStartParams: {num-cpus: '4'}\n  trainer:\n"
            "    rayStartParams: {num-cpus: '64'}\n  inference:\n    rayStartParams: {num-cpus: '4'}\n")),
        ("a pod larger than one node of its type", CHECK, infra("kuberay:\n  trainer:\n    gpus: 16\n"
                                                                "    nodeSelector:\n" + P5)),
        ("a label the node lacks", "check r.yaml -f a.yaml -f p.yaml",
         {"a.yaml": IMG + "kuberay:\n  trainer:\n    nodeSelector:\n" + P5 + "      kubernetes.io/arch: arm64\n"
                          "  inference:\n    nodeSelector:\n" + P5 + "      team: rl\n",
          "p.yaml": "plan:\n  nodePools: [{name: gpu, instanceType: p5.48xlarge, count: 2}]\n"}),
        ("a fragment's field, with a suggestion, and a value of the wrong type", CHECK, infra(
            "kuberay:\n  spec:\n    workerGroupSpecs:\n      - groupName: trainer\n        template:\n          spec:\n"
            "            containers:\n              - name: ray-worker\n                volumeMount: []\n"
            "                resources:\n                  limits:\n                    memory: lots\n")),
        *((f"a fragment's group that is no fleet{extra and ', listed'}", CHECK,
           infra(f"kuberay:\n{extra}  spec:\n    workerGroupSpecs:\n      - groupName: trainr\n        replicas: 1\n"))
          for extra in ("", "  extraGroups: [trainr]\n")),
        ("default-deny without the sandbox's policy", CHECK, infra(
            "  networkPolicy:\n    defaultDeny: true\nsandbox:\n  networkPolicy:\n    enabled: false\n")),
        ("a rule on a key the schema refused stays silent", CHECK + " trainer.lrr=2", infra(
            "kuberay:\n  trainer:\n    replicas: lots\n    memory: lots\n    memoryLimit: 1Gi\n")),
    ],
    "plan": [
        *((f"the plan section, at its lines ({command})", f"{command} r.yaml -f i.yaml", infra(
            "plan:\n  nodePools:\n  - {name: gpu, instanceType: p4de.24xlrge}\n  instanceTypes:\n    box:\n"
            "      allocatable: {cpu: lots}\n")) for command in ("plan", "check")),
        ("no node inventory", "plan r.yaml -f i.yaml", {}),
        ("a node file's value at its line", "plan r.yaml -f i.yaml --nodes nodes.yaml", {"nodes.yaml": (
            "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus:\n  allocatable:\n    cpu: lots\n")}),
        ("a node file without nodes", "plan r.yaml -f i.yaml --nodes pods.yaml",
         {"pods.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n"}),
        ("a malformed node file", "plan r.yaml -f i.yaml --nodes nodes.yaml",
         {"nodes.yaml": "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: x\n"}),
        ("a GPU group the nodes cannot hold", "plan r.yaml -f i.yaml", infra(POOLS)),
        ("a queued run planned without Kueue's objects", "plan r.yaml -f i.yaml", infra(QUEUED + POOLS)),
        ("Kueue admits the run, the nodes cannot hold it", "plan r.yaml -f i.yaml --kueue q.yaml",
         infra(QUEUED + POOLS, q_yaml=queues())),
        ("Kueue's verdict without a node inventory, a topology request not placed",
         "plan r.yaml -f i.yaml --kueue q.yaml",
         infra(QUEUED + "    topology: {mode: required, level: cloud.google.com/gce-topology-block}\n",
               q_yaml=queues(topology="gpus"))),
        ("a topology level no node carries", "plan r.yaml -f i.yaml --kueue q.yaml",
         infra(QUEUED + "    topology: {mode: required, level: cloud.google.com/gce-topology-block}\n" + POOLS,
               q_yaml=queues(topology="gpus"))),
        ("an autoscaled endpoint, planned at its most replicas", f"plan --serve {EX}/llama3_70b_eks_keda.serve.yaml "
         "--set 'plan.nodePools=[{name: p5, instanceType: p5.48xlarge, count: 2}, "
         "{name: cpu, instanceType: m6i.16xlarge, count: 2}]'", {}),
        ("--kueue alone for a run nothing of which is queued", "plan r.yaml -f i.yaml --kueue q.yaml",
         {"q.yaml": queues()}),
        ("a quota that is no quantity", "plan r.yaml -f i.yaml --kueue q.yaml", infra(QUEUED, q_yaml=queues("lots"))),
    ],
    "validate": [
        ("the API server's limits at the manifest line", "validate m.yaml", {"m.yaml": (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replicas: 3000000000\n"
            "  selector: {matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: x}}\n    spec:\n"
            "      terminationGracePeriodSeconds: 1000000000000000000000000000000\n      containers:\n"
            "        - name: c\n          image: x:1\n          env: [{name: 1BAD, value: a}]\n"
            "          readinessProbe: {periodSeconds: 9999999999, tcpSocket: {port: 80}}\n")}),
        ("an unknown field, a kind without a schema", "validate --summary m.yaml", {"m.yaml": (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n"
            "  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n"
            "      containers:\n      - name: c\n        image: x:1\n        bogus: 1\n---\n"
            "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")}),
        ("a Service name that is no DNS-1035 label, a selector no pod template matches", "validate m.yaml",
         {"m.yaml": (
             "apiVersion: v1\nkind: Service\nmetadata: {name: 9svc, namespace: ns}\nspec:\n  selector: {app: nope}\n"
             "  ports: [{port: 80}]\n---\napiVersion: v1\nkind: Pod\n"
             "metadata: {name: p, namespace: ns, labels: {app: web}}\nspec:\n"
             "  containers: [{name: c, image: x:1}]\n")}),
    ],
    "serve": [(name, "serve check s.serve.yaml", files) for name, files in [
        ("unknown keys with a suggestion, types", {"s.serve.yaml": (
            "infra:\n  namespace: llama\nserve:\n  modle:\n    id: a/b\n  gpus: two\n  backend: tgi\n")}),
        ("a directory given as a hub id", {"s.serve.yaml": "serve:\n  model: {id: /fsx/checkpoints/step-100}\n"}),
        ("a directory given as the model", {"s.serve.yaml": "serve:\n  model: /fsx/checkpoints/step-100\n"}),
        ("a model that is neither a mapping nor a hub id", {"s.serve.yaml": "serve:\n  model: 7\n"}),
        ("two replicas on a ReadWriteOnce cache", serve("  replicas: 2\n")),
        ("two replicas on the run's ReadWriteOnce storage", {"s.serve.yaml": (
            "infra:\n  namespace: rl\n  storage: {enabled: true, claimName: cache, accessMode: ReadWriteOnce, "
            "mountPath: /data}\nserve:\n  model: {path: /data/ckpt}\n  replicas: 2\n")}),
        ("a surge pod on a shared ReadWriteOnce claim", serve("  rollout: {strategy: RollingUpdate, maxSurge: 1}\n")),
        ("autoscaling's bounds the wrong way round", serve(
            "  autoscaling: {enabled: true, minReplicas: 3, maxReplicas: 2}\n  cache: {accessMode: ReadWriteMany}\n"
            "  network:\n    ingress: [{namespace: monitoring}]\n")),
        ("KEDA's cooldownPeriod, which moved", serve("  autoscaling: {enabled: true, cooldownPeriod: 600}\n")),
        ("the sandbox admitted to an endpoint without an API key", serve(
            "  network:\n    runs: [{name: grpo-swe, sandbox: true}]\n")),
        ("flags and variables the launcher sets", serve(
            "  backend: sglang\n  apiKeySecret: {name: k}\n  engine:\n    extraArgs: [--tp-size, '2', --api-key=abc]\n"
            "  env: {DOCKYARD_API_KEY: abc}\n")),
    ]] + [
        ("a training recipe given as the spec", "serve check grpo.yaml",
         {"grpo.yaml": "experiment: {name: x}\ntrainer: {lr: 1}\n"}),
    ],
    "check-report": [  # what check and serve check say of what they accept: notes, warnings, what is allowed
        ("a Job's one pod larger than any node check knows, the recipe's sandbox URLs overridden", CHECK, infra(
            "launch:\n  mode: job\nkuberay:\n  trainer: {replicas: 1, gpus: 16}\n  inference: {replicas: 0}\n")),
        ("fleets on an instance type check does not know", CHECK, infra(
            "kuberay:\n  trainer:\n    gpus: 4\n    nodeSelector: {node.kubernetes.io/instance-type: dgx2}\n")),
        ("the sandbox's opt-ins: egress blocks, private space on one port, more senders", CHECK, infra(
            "sandbox:\n  networkPolicy:\n    allowEgress: false\n    allowedEgressCidrs:\n      - 140.82.112.0/20\n"
            "      - {cidr: 10.30.0.0/16, ports: [443], private: true}\n    ingressFrom:\n"
            "      - namespaceSelector: {matchLabels: {team: eval}}\n")),
        ("egress to a named endpoint", CHECK, infra(
            "sandbox:\n  networkPolicy:\n    extraEgress:\n      - to: [{namespaceSelector: {matchLabels: "
            "{kubernetes.io/metadata.name: inference}}, podSelector: {matchLabels: {dockyard-k8s/endpoint: llama}}}]\n"
            "        ports: [{port: 8000}]\n")),
        ("Ray token auth and every network policy off", CHECK + " --set sandbox.networkPolicy.enabled=false", infra(
            "kuberay:\n  rayVersion: '2.49.0'\n  auth: {mode: disabled}\n  networkPolicy: {enabled: false}\n")),
        ("attach by address, queued with Kueue", CHECK + " --set launch.mode=attach "
                                                         "--set launch.attach.address=http://ray:8265",
         infra("  kueue:\n    queueName: q\n")),
        ("a Ray image whose tag gives its version", CHECK,
         {"i.yaml": "infra:\n  image: rayproject/ray:2.53.0-py311-cpu\n"}),
        ("kind: a profile's limit follows the request set above it, CPU pods on the one node",
         f"check {EX}/grpo_tiny.yaml --infra {EX}/kind_single_gpu.infra.yaml --set kuberay.trainer.memory=30Gi", {}),
        ("an endpoint KEDA scales on what a PodMonitor scrapes, spread across nodes",
         f"serve check {EX}/llama3_70b_eks_keda.serve.yaml --set serve.network.scope=namespace", {}),
        ("an endpoint scraped by annotations", f"serve check {EX}/llama3_8b_kind.serve.yaml", {}),
        *((f"SGLang {name}", "serve check s.serve.yaml", {"s.serve.yaml": (
            "infra:\n  namespace: llama\nserve:\n  model: {id: meta-llama/Meta-Llama-3-8B-Instruct}\n"
            f"  backend: sglang\n{extra}")}) for name, extra in [
                ("without an API key: its admin endpoints are open too", ""),
                ("with an API key: its admin key is another", "  apiKeySecret: {name: k}\n")]),
    ],
    "lint": [
        ("findings of hand-written manifests", "lint m.yaml", {"m.yaml": (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: team}\nspec:\n  replicas: 1\n"
            "  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n"
            "      containers:\n      - name: app\n        image: nginx\n"
            "        securityContext: {privileged: true}\n")}),
        ("paths from untrusted pods into a GPU pod from outside the cluster", "lint m.yaml", {"m.yaml": PUBLIC_PATHS}),
        ("a StatefulSet's Service, a RayJob's cleanup and deadline, EFA without a GPU", "lint m.yaml",
         {"m.yaml": WORKLOAD_RULES}),
        ("a field of an unexpected type is a finding", "lint odd.yaml", {"odd.yaml": (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n  containers:\n  - name: c\n"
            "    image: i:1\n    securityContext: {capabilities: {add: [NET_ADMIN], drop: 5}}\n")}),
        ("an endpoint's image, shm and runtime class", f"lint --serve {EX}/llama3_8b_kind.serve.yaml --set "
         "serve.image=vllm/vllm-openai:latest --set serve.shmSize=1Gi --set infra.runtimeClassName=runc "
         "--set lint.gpuRuntimeClass=nvidia", {}),
        ("an unknown rule to ignore", "lint m.yaml --ignore nope", {"m.yaml": "apiVersion: v1\nkind: ConfigMap\n"
                                                                              "metadata: {name: x}\n"}),
        ("a bad lint section", "lint m.yaml --infra l.yaml", {"m.yaml": "apiVersion: v1\nkind: ConfigMap\n"
                                                                        "metadata: {name: x}\n",
                                                             "l.yaml": "lint:\n  ignor: [image-tag]\n"}),
        ("a manifest that is not UTF-8", "lint cm.yaml", {"cm.yaml": b"apiVersion: v1\nkind: ConfigMap\n"
                                                                     b"metadata: {name: x\xff}\n"}),
        ("nothing to lint", "lint", {}),
        ("a rule to explain that does not exist", "lint --explain nope", {}),
    ],
}


def _run(name: str, argv: str, files: Files, where: Path, env: pytest.MonkeyPatch) -> str:
    """The case run in ``where`` (the current directory), as its golden text."""
    for file, text in {**BASE, **files}.items():
        path = where / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    words = shlex.split(argv)
    assigned = 0
    while "=" in words[assigned] and words[assigned].split("=")[0].isupper():  # VAR=value first, as in a shell
        env.setenv(*words[assigned].split("=", 1))
        assigned += 1
    code, out, err = run_cli(*(a.replace(f"{EX}/", f"{REPO}/{EX}/") for a in words[assigned:]))
    lines = [f"# {name}", "$ " + " ".join([*words[:assigned], "dockyard-k8s", argv.split(" ", assigned)[-1]])]
    for file, text in files.items():
        shown = text.decode(errors="backslashreplace") if isinstance(text, bytes) else text
        lines += [f"--- {file}", *shown.splitlines()]
    lines += [f"--- exit {code}", *err.splitlines(), *(["--- stdout", *out.splitlines()] if out else [])]
    text = "\n".join(lines).replace(f"{where}/", "").replace(f"{REPO}/", "") + "\n"
    return re.sub(r"\(kubernetes-validate [^)]+\)", "(kubernetes-validate VERSION)", text)  # not pinned


@pytest.mark.parametrize("kind", sorted(CASES))
def test_messages_are_golden(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = []
    for i, (name, argv, files) in enumerate(CASES[kind]):
        where = (tmp_path / str(i)).resolve()
        where.mkdir()
        with monkeypatch.context() as case:
            case.chdir(where)
            texts.append(_run(name, argv, files, where, case))
    compare(EXPECTED / f"{kind}.txt", "\n".join(texts))
