"""Writes of the fake API server: create, update (PUT), patch, server-side apply, with the
checks a real server makes on the way (namespace, body, field validation, admission,
subresources, finalizers of an object being deleted). Mixed into :class:`fakekube.FakeKube`."""

from __future__ import annotations

import copy
import json
import uuid
from typing import TYPE_CHECKING, Any

import fake_discovery as disc
import fake_ssa as ssa
import httpx2
import yaml
from fake_api import ApiFailure, qualified, spec_of, strip_status
from fake_schema import SchemaError, prune

if TYPE_CHECKING:
    from fakekube import FakeKube as _Base
else:
    _Base = object


class WritesMixin(_Base):
    def _check_namespace(self, res: disc.Resource, ns: str) -> None:
        if not res.namespaced:
            return
        namespace = self.store.get(("v1", "namespaces"), {}).get(("", ns))
        if namespace is None:
            raise ApiFailure(404, "NotFound", f'namespaces "{ns}" not found', name=ns, kind="namespaces")
        if (namespace.get("metadata") or {}).get("deletionTimestamp"):
            raise ApiFailure(403, "Forbidden", f"{res.plural} is forbidden: unable to create new content in "
                                               f"namespace {ns} because it is being terminated",
                             kind=res.plural, causes=[{"reason": "NamespaceTerminating",
                                                       "message": f"namespace {ns} is being terminated",
                                                       "field": "metadata.namespace"}])

    def _validate_fields(self, res: disc.Resource, obj: dict[str, Any], params: dict[str, str],
                         warnings: list[str]) -> dict[str, Any]:
        """Prune undeclared fields as the server stores them; Strict refuses, Warn warns (default)."""
        node = res.schema()
        if node is None:
            return obj
        pruned, dropped = prune(obj, node)
        mode = params.get("fieldValidation") or "Warn"
        if dropped and mode == "Strict":
            raise ApiFailure(400, "BadRequest", f'{res.kind} in version "{res.version}" cannot be handled as a '
                                                f"{res.kind}: strict decoding error: " +
                             ", ".join(f'unknown field "{d}"' for d in dropped))
        if mode == "Warn":
            warnings += [f'unknown field "{d}"' for d in dropped]
        return dict(pruned)

    def _admit(self, op: str, res: disc.Resource, obj: dict[str, Any], old: dict[str, Any] | None,
               warnings: list[str]) -> None:
        warnings += [text for kind, text in self.warnings if kind == res.kind]

    def _manager(self, params: dict[str, str], headers: Any, default: str) -> str:
        agent = str(headers.get("user-agent", "")).split("/")[0]
        return params.get("fieldManager") or agent or default

    def _check_body(self, res: disc.Resource, obj: Any, ns: str, name: str | None) -> None:
        if not isinstance(obj, dict):
            raise ApiFailure(400, "BadRequest", "the body of the request is not a JSON object")
        if (obj.get("apiVersion"), obj.get("kind")) != (res.api_version, res.kind):
            raise ApiFailure(400, "BadRequest", f"the API version in the data ({obj.get('apiVersion')}) does not "
                                                f"match the expected API version ({res.api_version})")
        meta = obj.get("metadata") or {}
        if name is not None and meta.get("name") != name:
            raise ApiFailure(400, "BadRequest", "the name of the object does not match the name on the URL")
        if ns and meta.get("namespace", ns) != ns:
            raise ApiFailure(400, "BadRequest", "the namespace of the provided object does not match the "
                                                "namespace sent on the request")

    def _create(self, res: disc.Resource, ns: str, obj: Any, params: dict[str, str], headers: Any,
                warnings: list[str]) -> httpx2.Response:
        self._check_body(res, obj, ns, None)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        name = str(meta.get("name") or "")
        if not name:
            raise ApiFailure(422, "Invalid", f"{res.kind} \"\" is invalid: metadata.name: Required value: name or "
                                             "generateName is required")
        self._check_namespace(res, ns)
        if (ns, name) in self.store.get(res.key, {}):
            raise ApiFailure(409, "AlreadyExists", f'{qualified(res)} "{name}" already exists', name=name,
                             group=res.group, kind=res.plural)
        obj = self._validate_fields(res, obj, params, warnings)
        if "status" in res.subresources:
            obj.pop("status", None)
        for k in ("uid", "resourceVersion", "generation", "deletionTimestamp", "managedFields"):
            obj["metadata"].pop(k, None)
        if ns:
            obj["metadata"]["namespace"] = ns
        self._admit("CREATE", res, obj, None, warnings)
        if params.get("dryRun") == "All":
            return self._json(201, obj)
        me = (self._manager(params, headers, "unknown"), "Update", "")
        node = res.schema() or disc.ANY_NODE
        self._own(res, (ns, name), ssa.update(None, obj, me, node, {}, status=True), [me])
        stored = self._write(res, obj)
        self._settle()
        return self._json(201, stored)

    def _scale_of(self, res: disc.Resource, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {"name": meta["name"], "namespace": meta.get("namespace"), "uid": meta["uid"],
                             "resourceVersion": meta["resourceVersion"],
                             "creationTimestamp": meta.get("creationTimestamp")},
                "spec": {"replicas": int((obj.get("spec") or {}).get("replicas") or 0)},
                "status": {"replicas": int((obj.get("status") or {}).get("replicas") or 0)}}

    def _commit(self, res: disc.Resource, ns: str, name: str, old: dict[str, Any], new: dict[str, Any],
                sub: str, params: dict[str, str], headers: Any, warnings: list[str], *,
                managers: ssa.Managers | None = None, me: ssa.Manager | None = None) -> httpx2.Response:
        """Store an updated object: subresource rules, finalizer rules, ownership, generation."""
        if sub == "status":
            new = {**old, "status": new.get("status")} if "status" in new else dict(old)
        elif sub == "scale":
            replicas = int((new.get("spec") or {}).get("replicas") or 0)
            new = copy.deepcopy(old)
            new.setdefault("spec", {})["replicas"] = replicas
        elif "status" in res.subresources:
            new = {**strip_status(new), **({"status": old["status"]} if "status" in old else {})}
        meta = dict(new.get("metadata") or {})
        old_meta = old["metadata"]
        for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            if k in old_meta:
                meta[k] = old_meta[k]
            else:
                meta.pop(k, None)
        meta.pop("managedFields", None)
        meta.pop("resourceVersion", None)
        meta["name"], meta["namespace"] = old_meta["name"], old_meta.get("namespace")
        new = {**new, "metadata": {k: v for k, v in meta.items() if v is not None}}
        if old_meta.get("deletionTimestamp"):
            added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
            if added:
                raise ApiFailure(422, "Invalid", f'{res.kind} "{name}" is invalid: metadata.finalizers: Forbidden: '
                                                 "no new finalizers can be added if the object is being deleted, "
                                                 f"found new finalizers {sorted(added)}")
        gen = int(old_meta.get("generation") or 1)
        new["metadata"]["generation"] = gen + (spec_of(new) != spec_of(old))
        if me is None:
            me = (self._manager(params, headers, "unknown"), "Update", sub)
        if managers is None:
            node = res.schema() or disc.ANY_NODE
            managers = ssa.update(old, new, me, node, self.managers.get((res.key, (ns, name)), {}),
                                  status=sub == "status" or "status" not in res.subresources)
        self._admit("UPDATE", res, new, old, warnings)
        unchanged = _strip_meta(new) == _strip_meta(old) and managers == self.managers.get((res.key, (ns, name)), {})
        if unchanged or params.get("dryRun") == "All":
            # a dry run answers what would be stored, at the version that is stored (nothing was written)
            out = old if unchanged else {**new, "metadata": {**new["metadata"], "resourceVersion": old[
                "metadata"]["resourceVersion"], "managedFields": ssa.managed_fields(
                    managers, res.api_version, self.manager_times.get((res.key, (ns, name)), {}))}}
            return self._json(200, self._scale_of(res, out) if sub == "scale" else out)
        self._own(res, (ns, name), managers, [me])
        stored = self._write(res, new)
        self._settle()
        stored = self.store.get(res.key, {}).get((ns, name), stored)
        return self._json(200, self._scale_of(res, stored) if sub == "scale" else stored)

    def _update(self, res: disc.Resource, ns: str, name: str, sub: str, obj: Any, params: dict[str, str],
                headers: Any, warnings: list[str]) -> httpx2.Response:
        old = self._existing(res, ns, name)
        if sub == "scale":
            return self._commit(res, ns, name, old, obj, sub, params, headers, warnings)
        self._check_body(res, obj, ns, name)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise ApiFailure(409, "Conflict", f'Operation cannot be fulfilled on {qualified(res)} "{name}": the '
                                              "object has been modified; please apply your changes to the latest "
                                              "version and try again", name=name, group=res.group, kind=res.plural)
        obj = self._validate_fields(res, obj, params, warnings)
        return self._commit(res, ns, name, old, obj, sub, params, headers, warnings)

    def _patch(self, res: disc.Resource, ns: str, name: str, sub: str, ctype: str, patch: Any,
               params: dict[str, str], headers: Any, warnings: list[str]) -> httpx2.Response:
        old = self._existing(res, ns, name)
        base = self._scale_of(res, old) if sub == "scale" else old
        try:
            new = ssa.PATCHERS[ctype](base, patch, res.schema() or disc.ANY_NODE)
        except (ValueError, KeyError, IndexError, TypeError) as e:
            raise ApiFailure(422, "Invalid", f"the patch could not be applied: {e}") from e
        if sub != "scale":
            new = self._validate_fields(res, new, params, warnings)
        return self._commit(res, ns, name, old, new, sub, params, headers, warnings)

    def _apply(self, res: disc.Resource, ns: str, name: str, sub: str, params: dict[str, str], body: bytes,
               warnings: list[str]) -> httpx2.Response:
        manager = params.get("fieldManager", "")
        if not manager:
            raise ApiFailure(400, "BadRequest", "PATCH, fieldManager is required for apply requests")
        try:
            applied = _strict_load(body)
        except (yaml.YAMLError, ValueError) as e:
            if params.get("fieldValidation") == "Strict":
                raise ApiFailure(400, "BadRequest", f"error strict decoding YAML: {e}") from e
            if params.get("fieldValidation", "Warn") == "Warn":
                warnings.append(str(e))
            applied = self._decode(body)
        self._check_body(res, applied, ns, name)
        key = (ns, name)
        existing = self.store.get(res.key, {}).get(key)
        node = res.schema() or disc.ANY_NODE
        status_owned = sub == "status" or "status" not in res.subresources
        me = (manager, "Apply", sub)
        try:
            result, managers = ssa.apply(existing, applied, me, node, self.managers.get((res.key, key), {}),
                                         force=params.get("force") == "true", api_version=res.api_version,
                                         status=status_owned)
        except SchemaError as e:
            raise ApiFailure(500, "", f"failed to create typed patch object ({ns + '/' if ns else ''}{name}; "
                                      f"{res.api_version}, Kind={res.kind}): {e}") from e
        except ssa.ConflictError as e:
            raise ApiFailure(409, "Conflict", str(e), causes=e.causes) from e
        if existing is not None:
            return self._commit(res, ns, name, existing, result, sub, params, {}, warnings, managers=managers, me=me)
        if sub:
            raise ApiFailure(404, "NotFound", f'{qualified(res)} "{name}" not found', name=name, kind=res.plural)
        self._check_namespace(res, ns)
        if "status" in res.subresources:
            result.pop("status", None)
        if ns:
            result["metadata"]["namespace"] = ns
        self._admit("CREATE", res, result, None, warnings)
        if params.get("dryRun") == "All":
            return self._json(201, result)
        self._own(res, key, managers, [me])
        stored = self._write(res, result)
        self._settle()
        return self._json(201, stored)


def _strip_meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("resourceVersion", "managedFields")}
    return {**obj, "metadata": meta}


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f'key "{key}" already set in map')
        out[key] = value
    return out


def _strict_load(body: bytes) -> Any:
    """An apply body (JSON, as kubectl and the launcher send it, or YAML), duplicate keys refused."""
    try:
        return json.loads(body, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError:
        return yaml.load(body, Loader=_StrictLoader)


class _StrictLoader(yaml.CSafeLoader):
    """YAML with duplicate keys refused (what ``fieldValidation`` checks of an apply body)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f'key "{key}" already set in map',
                                                        key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _StrictLoader.construct_mapping)
