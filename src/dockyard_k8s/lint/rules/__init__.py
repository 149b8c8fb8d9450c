"""Rule families, one module each. Every module exposes ``RULES``: a tuple of :class:`Rule`.

    security.py   privilege, host access, capabilities, identity, kernel knobs
    network.py    what untrusted pods can reach, NetworkPolicy coverage, Services, Ray auth
    env.py        secrets written as literals, names defined twice
    resources.py  requests, limits, extended resources (GPUs, EFA), namespace governance
    images.py     pinned tags, digests, pull policy
    workloads.py  probes, disruption budgets, job lifetimes, StatefulSet services
    gpu.py        GPU training pitfalls: /dev/shm, RuntimeClass, EFA/NCCL settings
    _util.py      small helpers the families share

The registry (``lint/registry.py``) concatenates them in this order, which is also the
order of ``--list-rules`` and of the table in docs/lint.md.
"""
