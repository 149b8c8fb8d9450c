"""Objects the validation tests start from (valid as written; each test breaks one thing)."""

DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web"}},
    "spec": {
        "replicas": 2, "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "ports": [{"containerPort": 80}],
                                     "resources": {"limits": {"cpu": "1", "nvidia.com/gpu": 8}}}]},
        },
    },
}
