"""Live orchestration: the only package that talks to a cluster (or a Ray dashboard).

Layout, pure first, I/O second::

    kinds.py       kind -> REST path table (pure)
    requests.py    prepare_*: every Kubernetes request as plain data (pure)
    client.py      KubeClient: the one place that sends; retries, error mapping, watches
    diagnose.py    pod/container states and events -> fleet + pod + reason + hint (pure)
    progress.py    kind handlers (RayJob, RayCluster, Job, StatefulSet...) and the run view (pure)
    orchestrate.py apply / follow / snapshot / down: the flows behind run, status, down
    scaling.py     an autoscaled RayCluster re-applied with its live replicas; worker-group conflicts (pure)
    launch.py      the facade the CLI calls: launch / status / wait / down / preview (typed options)
    logs.py        pod selection and merged, prefixed log streams
    rayjobs.py     the Ray Jobs REST API (dashboard :8265, /api/jobs/)
    dashboard.py   where a run's Ray dashboard is (address, cluster, port-forward) and a Jobs client on it
    portforward.py ``kubectl port-forward`` as a context manager
    dev.py         the CPU dev pod and its Secret (builders are pure)
    doctor.py      preflight checks (evaluation is pure; fetching is separate)
    nccl.py        ``nccl-test --run``: apply the MPIJob, wait for its launcher, read its log

Nothing here is imported by ``check``/``render``: the CLI imports this package inside
the handlers of live commands only (``lightkube``/``httpx2`` cost ~300 ms to import).
"""
