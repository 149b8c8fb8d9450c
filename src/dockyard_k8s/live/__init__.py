"""Live orchestration: the only package that talks to a cluster (or a Ray dashboard).

Layout, pure first, I/O second::

    kinds.py       kind -> REST collection (plural, scope) table (pure)
    kubeconfig.py  kubeconfig files read (and merged) as kubectl reads them
    credentials.py a kubeconfig user's credentials (token, tokenFile, exec plugin) and the context as
                   lightkube's SingleConfig, each failure one located error
    answers.py     the API server's answers in our words: errors naming the object, Warning headers
    client.py      KubeClient: the one place that sends, on lightkube's request pipeline; retries,
                   server-side apply, watches that re-list on 410
    crdfields.py   fields the run renders that the cluster's CRDs lack, and the release that has them
    diagnose.py    pod/container states and events -> Diagnosis: fleet + pod + reason + hint (pure)
    progress.py    kind handlers (RayJob, RayCluster, Job, StatefulSet...) and the run view (pure)
    kueue.py       the run's Kueue Workload: queued, admitted, evicted; the Kueue objects doctor reads
    orchestrate.py apply / follow / snapshot: the flows behind run and status
    teardown.py    down: workloads first, NetworkPolicies once the run's pods are gone; down --wait
    scaling.py     an autoscaled RayCluster re-applied with its live replicas; worker-group conflicts (pure)
    record.py      the launch record ConfigMap: what a run was launched with
    launch.py      the facade the CLI calls: launch / status / wait / down / preview (typed options)
    runs.py        runs found by name (no launch files) and ``runs``' list of every run
    serve.py       a model endpoint: launch.py's sequence for ``serve up|status|down``
    logs.py        pod selection and merged, prefixed log streams
    rayhead.py     Ray head access: where its dashboard is (address, cluster, port-forward), the Ray token
                   (its Secret, credentials, does the head refuse without it), the Ray Jobs REST client
    portforward.py ``kubectl port-forward`` as a context manager
    openai.py      one timed OpenAI completion against an endpoint (``serve test``)
    dev.py         the CPU dev pod and its Secret (builders are pure)
    checks.py      Check: one line of doctor's report (✔ ✖ !), below every module that makes them
    doctor.py      preflight checks, Kueue's among them (evaluation is pure; fetching is separate)
    references.py  doctor: what the pods name (Secrets, PVCs, classes, ServiceAccount) must exist
    operator.py    doctor: the KubeRay operator Deployment, ready and watching the namespace
    netpol.py      whether the network plugin enforces NetworkPolicy (doctor; run's warning)
    nccl.py        ``nccl-test --run``: apply the MPIJob, wait for its launcher, read its log

Nothing here is imported by ``check``/``render``: the CLI imports this package inside
the handlers of live commands only (``lightkube``/``httpx2`` are the costliest imports of all:
bench/README.md, "Import costs").
"""
