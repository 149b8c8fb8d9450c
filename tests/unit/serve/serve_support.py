"""Helpers of the serve tests: write a spec, load or render it, find objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dockyard_k8s.config.layering import Layers
from dockyard_k8s.config.serve import ServeConfig, load_serve
from dockyard_k8s.serve_bundle import ServeBundle, build_serve_bundle

MODEL = {"id": "meta-llama/Meta-Llama-3-8B-Instruct"}


def spec_text(serve: dict[str, Any] | None = None, **sections: Any) -> str:
    """A serve spec: the infra sections given, and serve (a hub model by default)."""
    doc: dict[str, Any] = {"infra": {"namespace": "llama"}, **sections}
    doc["serve"] = {"model": dict(MODEL), **(serve or {})}
    return yaml.safe_dump(doc, sort_keys=False)


def write_spec(tmp: Path, serve: dict[str, Any] | None = None, *, name: str = "llama.serve.yaml",
               **sections: Any) -> str:
    path = tmp / name
    path.write_text(spec_text(serve, **sections))
    return str(path)


def load(tmp: Path, serve: dict[str, Any] | None = None, *, sets: tuple[str, ...] = (), **sections: Any) -> ServeConfig:
    return load_serve(write_spec(tmp, serve, **sections), Layers(sets=sets, env={"HOME": str(tmp / "nohome")}))


def bundle(tmp: Path, serve: dict[str, Any] | None = None, *, sets: tuple[str, ...] = (),
           **sections: Any) -> ServeBundle:
    return build_serve_bundle(write_spec(tmp, serve, **sections), Layers(sets=sets, env={"HOME": str(tmp / "nohome")}))


def find(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    hits = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(hits) == 1, f"{len(hits)} {kind} {name or ''}"
    return hits[0]


def server(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The model server container of the Deployment."""
    return find(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]  # type: ignore[no-any-return]


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}
