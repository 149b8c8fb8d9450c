"""Container images: pinned tags, digests, pull policy for multi-GB training images."""

from __future__ import annotations

from collections.abc import Iterator

from dockyard_k8s.kube import split_image
from dockyard_k8s.lint.model import ERROR, INFO, WARNING, Context, Hit, Obj, Rule
from dockyard_k8s.lint.rules._util import cname

# Kinds whose pods run the training image (gang members).
GANG_KINDS = ("RayJob", "RayCluster", "MPIJob", "PyTorchJob")


def image_tag(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        for path, k in pod.containers():
            image = k.get("image")
            if not isinstance(image, str) or not image:
                continue
            _, tag, digest = split_image(image)
            if digest:
                continue
            if tag is None:
                yield Hit((*path, "image"), f"container {cname(k)!r}: image {image} has no tag (means :latest)")
            elif tag == "latest":
                yield Hit((*path, "image"), f"container {cname(k)!r}: image {image} uses the moving :latest tag")


def image_digest(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        for path, k in pod.containers():
            image = k.get("image")
            if isinstance(image, str) and image:
                _, tag, digest = split_image(image)
                if tag not in (None, "latest") and not digest:
                    yield Hit((*path, "image"), f"container {cname(k)!r}: image {image} is pinned by tag, not digest")


def pull_always(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        if not (pod.gpus or o.kind in GANG_KINDS):
            continue
        for path, k in pod.containers():
            if k.get("imagePullPolicy") == "Always":
                yield Hit((*path, "imagePullPolicy"),
                          f"container {cname(k)!r}: imagePullPolicy Always re-pulls the training image on every "
                          "pod start (5-10 min for a cold multi-GB pull)")


RULES = (
    Rule("image-tag", ERROR, "Images must be pinned to a tag (never :latest or untagged)",
         "An untagged or :latest image changes under the run: two pods of one gang can start different code, and "
         "a restart weeks later pulls something else. :latest also defaults imagePullPolicy to Always. Fix: pin a "
         "version tag (e.g. :vllm-0.11.0-2026.11.02), better a digest.",
         ("kube-linter latest-tag", "Polaris tagNotSpecified", "kube-score container-image-tag", "Checkov"), image_tag),
    Rule("image-digest", INFO, "Images are best pinned by digest",
         "A tag can be pushed again; a digest (image@sha256:...) cannot, so every node runs exactly the bytes that "
         "were tested. Fix: append @sha256:<digest> (keep the tag for readers).",
         ("Checkov", "kube-linter"), image_digest),
    Rule("image-pull-always", WARNING, "Training images should not use imagePullPolicy: Always",
         "RL training images are 15-20 GB: Always checks the registry on every pod start and, with a moved tag, "
         "pulls again (5-10 minutes per node); with a pinned tag IfNotPresent is correct and uses the node's cache. "
         "Fix: imagePullPolicy: IfNotPresent (infra.imagePullPolicy) and a pinned tag.",
         ("EKS RL manifests: Image Pull Considerations",), pull_always),
)
