from dockyard_k8s.cli import run

run()
