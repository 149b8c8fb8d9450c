"""``dockyard-k8s lint``: policy rules for GPU training runs and an untrusted-code sandbox.

    model.py     Rule, Finding, the object under lint (Obj, its pods) and LintConfig: plain data
    rules/       one module per rule family; registry.py collects them (RULES, BY_ID)
    engine.py    lint_objects: rules over objects (``manifests.py`` reads them) -> LintReport
    pss.py       the Pod Security Standards level of every pod template
    reach.py     who can reach whom through the rendered NetworkPolicies
    isolation.py what the untrusted pods may reach (Exposure): sandbox-isolation and check's warnings
    entries.py   public ways into pods (LoadBalancer/NodePort, KubeRay's head Service and Ingress, Ingress)
    output.py    text, JSON and SARIF

Import from the module that defines a name (``lint.engine``, ``lint.model``...): ``check`` imports
``isolation.py`` (and ``reach.py``) alone, without what the ``lint`` command needs.
"""
