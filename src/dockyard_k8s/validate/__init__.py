"""Offline, strict validation of Kubernetes manifests: manifests -> list[Problem].

    problem.py    Document, Problem, Report: results as plain data
    reader.py     files / directories / stdin -> documents (yaml-rs, kubectl's YAML semantics)
    split.py      a YAML stream -> its documents, at ``---`` lines
    goyaml.py     go-yaml v2's scalars and keys; the pre-scan; the PyYAML-based reader
    locate.py     the line of each problem
    builtin.py    built-in schemas per Kubernetes version (kubernetes-validate's data)
    crd.py        which CRD defines a kind: --crd, fetched and bundled CRDs (crds/), memoized
    crd_convert.py CRD YAML -> strict JSON schemas (only when a validator must be built)
    cache.py      the on-disk cache of converted schemas and compiled validators
    compiled.py   compiled yes/no validators (fastjsonschema code, cached, run without importing it)
    collect.py    every schema problem of an object that failed, with its JSON path
    semantic.py   what the API server rejects that schemas cannot say, object by object
    cross.py      rules across objects: a Service must select pods of the input
    kuberay.py    what the KubeRay operator rejects at reconcile time
    kueue.py      what Kueue's admission webhook refuses on a queued job
    engine.py     all of the above over a set of objects -> Report (ValidateOptions)
    bulk.py       large inputs on every core (forked workers), same result as engine's
    output.py     text / json / junit / tap
    fetch.py      ``schemas fetch``: KubeRay CRDs for a release into the user cache

Import from the module that defines a name (``validate.engine``, ``validate.problem``...).
"""
