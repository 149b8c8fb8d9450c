"""Deletion in the fake API server: finalizers and ``deletionTimestamp``, propagation policies
through ownerReferences (the garbage collector), graceful pod termination, namespace
termination. Mixed into :class:`fakekube.FakeKube`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import fake_discovery as disc
import httpx2
from fake_api import ApiFailure, now_stamp

if TYPE_CHECKING:
    from fakekube import FakeKube as _Base
else:
    _Base = object


class DeletionMixin(_Base):
    # --- deletion, finalizers, garbage collection ----------------------------------------------
    def _delete(self, res: disc.Resource, ns: str, name: str, params: dict[str, str],
                options: dict[str, Any] | None = None) -> httpx2.Response:
        options = options or {}
        obj = self._existing(res, ns, name)
        pre = (options.get("preconditions") or {})
        if pre.get("uid") and pre["uid"] != obj["metadata"]["uid"]:
            raise ApiFailure(409, "Conflict", f"Precondition failed: UID in precondition: {pre['uid']}, UID in "
                                              f"object meta: {obj['metadata']['uid']}")
        if params.get("dryRun") == "All" or "All" in (options.get("dryRun") or []):
            return self._json(200, obj)
        propagation = params.get("propagationPolicy") or options.get("propagationPolicy") or "Background"
        grace = params.get("gracePeriodSeconds", options.get("gracePeriodSeconds"))
        meta = dict(obj["metadata"])
        finalizers = list(meta.get("finalizers") or [])
        if propagation == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers.append("foregroundDeletion")
        if propagation == "Orphan" and "orphan" not in finalizers:
            finalizers.append("orphan")
        graceful = res.kind == "Pod" and (obj.get("spec") or {}).get("nodeName") and str(grace) != "0"
        if not finalizers and not graceful and res.kind != "Namespace":
            gone = self._remove(res, ns, name)
            self._settle()
            return self._json(200, gone)
        if not meta.get("deletionTimestamp"):
            seconds = int(grace if grace is not None else (obj.get("spec") or {}).get(
                "terminationGracePeriodSeconds", 30)) if graceful else 0
            meta |= {"deletionTimestamp": now_stamp(), "deletionGracePeriodSeconds": seconds,
                     "generation": int(meta.get("generation") or 1) + 1}
            if finalizers:
                meta["finalizers"] = finalizers
            update = {**obj, "metadata": meta}
            if res.kind == "Namespace":
                update["status"] = {"phase": "Terminating"}
            self._write(res, update)
        self._settle()
        current = self.store.get(res.key, {}).get((ns, name))
        if current is not None and graceful and self.kubelet_terminates:
            self.finish_pod(ns, name)
        return self._json(200, current or obj)

    def _remove(self, res: disc.Resource, ns: str, name: str) -> dict[str, Any]:
        obj = self.store[res.key].pop((ns, name))
        self._uids.discard(str(obj["metadata"]["uid"]))
        self._gc_needed = True
        self.managers.pop((res.key, (ns, name)), None)
        gone = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self._bump())}}
        self._record(res.key, "DELETED", gone, obj)
        return gone

    def _dependents(self, uid: str) -> list[tuple[disc.Resource, str, str, dict[str, Any]]]:
        out = []
        for key, objs in self.store.items():
            for (ons, oname), other in objs.items():
                if any(r.get("uid") == uid for r in (other.get("metadata") or {}).get("ownerReferences") or []):
                    out.append((self.resources[key], ons, oname, other))
        return out

    def _settle(self) -> None:
        """Garbage collection and finalizers, until nothing changes: orphan and foreground
        finalizers, dependents of deleted owners, terminating namespaces, objects whose
        last finalizer went. Only after a deletion or a write to a terminating object."""
        if not self._gc_needed:
            return
        for _ in range(10000):
            if not self._settle_once():
                self._gc_needed = False
                return
        raise AssertionError("fake API server: garbage collection does not settle")

    def _settle_once(self) -> bool:
        uids = self._uids
        for key, objs in list(self.store.items()):
            res = self.resources.get(key)
            for (ns, name), obj in list(objs.items()):
                meta = obj.get("metadata") or {}
                refs = meta.get("ownerReferences") or []
                if res is None:
                    continue
                if refs and all(r.get("uid") not in uids for r in refs) and not meta.get("deletionTimestamp"):
                    self._delete(res, ns, name, {"propagationPolicy": "Background"})
                    return True
                if not meta.get("deletionTimestamp"):
                    continue
                finalizers = list(meta.get("finalizers") or [])
                if "orphan" in finalizers:
                    for dres, _, _, dep in self._dependents(meta["uid"]):
                        dmeta = dict(dep["metadata"])
                        dmeta["ownerReferences"] = [r for r in dmeta["ownerReferences"] if r.get("uid") != meta["uid"]]
                        self._write(dres, {**dep, "metadata": dmeta})
                    self._write(res, {**obj, "metadata": {**meta, "finalizers": [f for f in finalizers
                                                                                 if f != "orphan"]}})
                    return True
                if "foregroundDeletion" in finalizers:
                    deps = self._dependents(meta["uid"])
                    for dres, dns, dname, dep in deps:
                        if not (dep.get("metadata") or {}).get("deletionTimestamp"):
                            self._delete(dres, dns, dname, {"propagationPolicy": "Foreground"})
                            return True
                    if not deps:
                        self._write(res, {**obj, "metadata": {**meta, "finalizers": [
                            f for f in finalizers if f != "foregroundDeletion"]}})
                        return True
                if res.kind == "Namespace":
                    content = [(k, n) for k, objs2 in self.store.items() for (n, _) in objs2 if n == name
                               and self.resources.get(k) and self.resources[k].namespaced]
                    for k, _ in content:
                        for (n2, nm), o in list(self.store[k].items()):
                            if n2 == name and not (o.get("metadata") or {}).get("deletionTimestamp"):
                                self._delete(self.resources[k], n2, nm, {"propagationPolicy": "Background"})
                                return True
                    if not content and (obj.get("spec") or {}).get("finalizers"):
                        self._write(res, {**obj, "spec": {"finalizers": []}, "status": {"phase": "Terminating"}})
                        return True
                    if not content and not finalizers:
                        self._remove(res, ns, name)
                        return True
                    continue
                if not finalizers and not (res.kind == "Pod" and (obj.get("spec") or {}).get("nodeName")):
                    self._remove(res, ns, name)
                    return True
        return False

