"""``dockyard-k8s plan``: will every pod of the run schedule, and if not, which and why.

* ``catalog.py``   instance types -> node allocatable (EKS overhead formula, workstation)
* ``inventory.py`` nodes from plan.nodePools, from ``kubectl get nodes/pods -o yaml``, or live
* ``sources.py``   which inventory and Kueue objects ``plan`` reads (--live, --nodes, nodePools;
  --kueue, the cluster's, the rendered queue objects); a malformed input reported as ``validate`` does
* ``pods.py``      the run's pod groups (head, worker groups, submitter, sandbox replicas)
* ``predicates.py`` the default scheduler's filters and its FitError wording
* ``units.py``     resource amounts as the scheduler compares them: integers
* ``schedule.py``  quota admission, first-fit placement, gang verdict
* ``fit.py``       ``check``'s test: does every pod fit one node of the instance type it selects
* ``report.py``    text and JSON
* ``kueue_model.py``  Kueue's quota tree (ClusterQueues, Cohorts, borrowing and lending limits, usage)
* ``kueue_assign.py`` Kueue's admission of one workload: flavors per pod set, its words
* ``kueue_preempt.py`` Kueue's classical preemption: when it is tried, candidates, the minimal targets
* ``kueue_plan.py``   admission first, topology domains, then the scheduler on what Kueue admits
* ``kueue_report.py`` text and JSON of ``plan --kueue``
"""

from __future__ import annotations

from dockyard_k8s.plan.inventory import Inventory, from_objects, from_pools, inventory_from_cluster
from dockyard_k8s.plan.schedule import GroupResult, PlanResult, plan

__all__ = ["GroupResult", "Inventory", "PlanResult", "from_objects", "from_pools", "inventory_from_cluster", "plan"]
