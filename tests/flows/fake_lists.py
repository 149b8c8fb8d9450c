"""LIST chunking of the fake API server ("Retrieving large results sets in chunks"): at most
``limit`` items and an opaque ``metadata.continue`` token while more remain, every chunk a
consistent snapshot at the first chunk's resourceVersion, ``remainingItemCount`` only
without selectors, selectors changed under a token 400, a token older than the last
compaction 410 ``Expired``; ``fake.max_page`` returns fewer items than ``limit``, as a
server may; ``fake.slow_list_over`` makes an unchunked LIST of more items time out (504
``Timeout``, the API server's request timeout on a list too large to send in time)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fake_api import ApiFailure

if TYPE_CHECKING:
    from fake_discovery import Resource
    from fakekube import FakeKube


def _token(token: str) -> dict[str, Any]:
    try:
        doc = json.loads(base64.urlsafe_b64decode(token.encode()))
        assert isinstance(doc, dict) and {"rv", "id", "start"} <= doc.keys()
        return doc
    except (ValueError, AssertionError):
        raise ApiFailure(400, "BadRequest", "continue key is not valid: illegal base64 data") from None


def list_items(fake: FakeKube, res: Resource, ns: str, params: dict[str, str],
               match: Callable[[dict[str, Any]], bool]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(the stored objects of this chunk, the list's metadata)."""
    query = json.dumps([res.key, ns, params.get("labelSelector", ""), params.get("fieldSelector", "")])
    token = params.get("continue", "")
    if token:
        doc = _token(token)
        snap = fake.snapshots.get(int(doc["id"]))
        if int(doc["rv"]) <= fake.compacted or snap is None:
            raise ApiFailure(410, "Expired", "The provided continue parameter is too old to display a consistent "
                                             "list result. You can start a new list without the continue parameter.")
        rv, snap_query, items = snap
        if snap_query != query:
            raise ApiFailure(400, "BadRequest", "the continue token was issued for a different list: selectors "
                                                "and the collection must not change between chunks")
        start = int(doc["start"])
    else:
        rv, start = fake.rv, 0
        items = [o for _, o in sorted(fake.store.get(res.key, {}).items()) if match(o)]
    limit = int(params.get("limit") or 0)
    if fake.slow_list_over and not limit and len(items) > fake.slow_list_over:
        raise ApiFailure(504, "Timeout", "the server was unable to return a response in the time allotted, "
                                         f"but may still be processing the request (get {res.plural})")
    if fake.max_page and limit > fake.max_page:  # "the server may return fewer items than limit"
        limit = fake.max_page
    end = start + limit if limit > 0 else len(items)
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if end < len(items):
        if token:
            snap_id = int(_token(token)["id"])
        else:  # stored objects are replaced by writes, never changed in place: holding them is a snapshot
            fake.snapshot_seq += 1
            snap_id = fake.snapshot_seq
            fake.snapshots[snap_id] = (rv, query, items)
        meta["continue"] = base64.urlsafe_b64encode(json.dumps(
            {"v": "meta.k8s.io/v1", "rv": rv, "id": snap_id, "start": end}).encode()).decode()
        if not params.get("labelSelector") and not params.get("fieldSelector"):
            meta["remainingItemCount"] = len(items) - end
    return items[start:end], meta
