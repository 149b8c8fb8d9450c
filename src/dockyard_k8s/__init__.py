"""dockyard-k8s: recipe + infra spec -> a validated KubeRay GPU run with a hardened sandbox pool.

The public surface is small, plain data in and out (the CLI is built on it)::

    run = load_run("grpo_swe.yaml", "grpo_swe.infra.yaml")   # config.loader: RunConfig, or ConfigError
    objects = render_run(run)                                 # render: the objects, in apply order
    bundle = build_bundle("grpo_swe.yaml")                    # both, and every offline check (what check does)
    bundle = build_bundle("grpo_swe.yaml", None, Layers(sets=["kuberay.trainer.replicas=4"]))  # + --set and more
    problems = validate_objects(objects)                      # validate: Kubernetes + CRD schemas, API rules
    report = lint_objects(objects)                            # lint: policy findings, Pod Security levels
    result = plan_objects(objects, from_pools(run.infra["plan"]))  # plan: the scheduler's verdict per pod
    manifests = read_objects(["k8s/"])                        # manifest files for lint and plan

and the error types (:mod:`dockyard_k8s.errors`).

Layout, inputs first (each package's docstring lists its modules)::

    errors.py        the error tree and exit codes
    plain.py         plain data: clone, JSON paths, how a value is shown in messages
    kube.py          pure Kubernetes helpers: quantities, pod templates, selectors, object refs, images
    kueue.py         Kueue's names and its view of a job
    credentials.py   what is a credential (names, token shapes): refused by value, redacted, linted
    suggest.py       the one "did you mean" of every near-miss name (one cutoff)
    names.py         the one home of Kubernetes name grammars: DNS labels, subdomains, label keys and values
    yamlfile.py      YAML in and out, the only module that reads or writes it: marks, one dump
    config/          recipe + infra files and flags -> one resolved RunConfig
    render/          pure renderers: RunConfig -> objects, in apply order
    bundle.py        load, render, check: what every run-shaped command builds on
    serve_bundle.py  the same for a model endpoint (``serve``)
    validate/        offline manifest checks (schemas, API server and operator rules)
    manifests.py     objects for lint and plan: manifest files or a run's, with their lines
    lint/ plan/      policy rules and Pod Security levels; the scheduler's (and Kueue's) verdict
    output.py        rendered objects written to files
    live/            the only package that talks to a cluster
    cli/             the command line: parse, call, print (``__main__.py`` runs it)
"""

from __future__ import annotations

__version__ = "0.1.0"  # before the imports: render/record.py reads it while they run

from dockyard_k8s.bundle import Bundle, build_bundle
from dockyard_k8s.config.layering import Layers
from dockyard_k8s.config.loader import load_run
from dockyard_k8s.config.model import RunConfig
from dockyard_k8s.errors import ClusterError, ConfigError, DockyardError, ManifestError, UsageError
from dockyard_k8s.lint.engine import lint_objects
from dockyard_k8s.manifests import read_objects
from dockyard_k8s.plan import from_pools
from dockyard_k8s.plan import plan as plan_objects  # `plan` is the package's name
from dockyard_k8s.render import render_run
from dockyard_k8s.validate.engine import validate_objects

__all__ = ["Bundle", "ClusterError", "ConfigError", "DockyardError", "Layers", "ManifestError", "RunConfig",
           "UsageError", "__version__", "build_bundle", "from_pools", "lint_objects", "load_run", "plan_objects",
           "read_objects", "render_run", "validate_objects"]
