import pytest

from dockyard_k8s.bundle import build_bundle
from dockyard_k8s.config.layering import Layers

BASE_INFRA = """\
infra:
  namespace: team
  image: reg.example.com/ubuntu-swe:vllm-1.0
  imagePullSecrets: [pull]
  priorityClassName: gpu-high
"""


@pytest.fixture
def render(write, clean_env):
    """render(extra, sets, overrides, infra) -> ({(kind, name): object}, [objects]) of a small run
    (the platforms tests' ``bundle_of`` gives the whole Bundle instead).

    ``extra`` is appended to the infra file; ``infra`` lines go inside its ``infra:`` section."""

    def _render(extra: str = "", sets=(), overrides=(), infra: str = ""):
        recipe = write("exp.yaml", "model: m\nenv:\n  code:\n    sandbox_urls: [http://localhost:9090]\n")
        inner = "".join(f"  {line}\n" for line in infra.splitlines())
        infra = write("exp.infra.yaml", BASE_INFRA + inner + extra)
        objects = build_bundle(recipe, infra, Layers(sets=list(sets), overrides=list(overrides), env=clean_env)).objects
        return {(o["kind"], o["metadata"]["name"]): o for o in objects}, objects

    return _render
