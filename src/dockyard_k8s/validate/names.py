"""The name grammars of Kubernetes: what the API server accepts as a name, a label or a key.

Source: ``k8s.io/apimachinery/pkg/util/validation`` (``IsDNS1123Label``,
``IsDNS1123Subdomain``, ``IsDNS1035Label``, ``IsQualifiedName``, ``IsValidLabelValue``,
``IsValidPortName``, ``IsConfigMapKey``). Each check returns why a value is wrong, in words,
or None. The semantic rules (:mod:`.semantic`) call these; a new grammar (an environment
variable name, for instance) goes here, with its source.

Label keys and values, namespaces and port names repeat on every object of a large input, so
the verdicts of those found fine are remembered (:func:`remember`, bounded).
"""

from __future__ import annotations

import re
from typing import Any

from dockyard_k8s.plain import show

_DNS1123_LABEL = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?").fullmatch
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*").fullmatch
_DNS1035_LABEL = re.compile(r"[a-z](?:[-a-z0-9]*[a-z0-9])?").fullmatch
_QUALIFIED_PART = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?").fullmatch
_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+").fullmatch

# Name formats: (maximum length, grammar, how to say it).
NAME_FORMATS = {
    "dns1035": (63, _DNS1035_LABEL, "a DNS-1035 label (lowercase letters, digits, '-', starting with a letter)"),
    "dns1123label": (63, _DNS1123_LABEL, "a DNS-1123 label (lowercase letters, digits, '-')"),
    "dns1123subdomain": (253, _DNS1123_SUBDOMAIN, "a DNS-1123 subdomain (lowercase letters, digits, '-', '.')"),
}
# Object names whose format differs from the default (DNS-1123 subdomain), by kind.
NAME_FORMAT = {
    "Service": "dns1035",  # becomes a DNS label of the cluster domain
    "Namespace": "dns1123label",
}

_MEMO_MAX = 8192


def remember(memo: dict[Any, Any], key: Any, value: Any = True) -> None:
    """Keep a verdict, up to :data:`_MEMO_MAX` of them (a huge input cannot grow a memo without limit)."""
    if len(memo) < _MEMO_MAX:
        memo[key] = value


def is_dns1123_label(text: str) -> bool:
    """``[a-z0-9]([-a-z0-9]*[a-z0-9])?``"""
    return _DNS1123_LABEL(text) is not None


def is_dns1123_subdomain(text: str) -> bool:
    """Dot-separated DNS-1123 labels."""
    return _DNS1123_SUBDOMAIN(text) is not None


def is_dns1035_label(text: str) -> bool:
    """``[a-z]([-a-z0-9]*[a-z0-9])?``"""
    return _DNS1035_LABEL(text) is not None


def is_config_key(text: str) -> bool:
    """A ConfigMap/Secret data key: letters, digits, ``-``, ``_``, ``.``; at most 253."""
    return 0 < len(text) <= 253 and _CONFIG_KEY(text) is not None


def is_percent(text: str) -> bool:
    """An int-or-percent string such as ``25%``."""
    return text.endswith("%") and text[:-1].isascii() and text[:-1].isdigit()


def check_name(name: Any, fmt: str, what: str) -> str | None:
    """Why ``name`` is not a valid ``fmt`` name (a key of :data:`NAME_FORMATS`), or None.
    ``what`` names it in the message (``"Service name"``); a non-string is the schema's business."""
    if name.__class__ is not str:
        return None
    limit, test, words = NAME_FORMATS.get(fmt) or NAME_FORMATS["dns1123subdomain"]
    if len(name) > limit:
        return f"{what} {show(name)} has {len(name)} characters, expected at most {limit}"
    if test(name) is None:
        return f"{what} {show(name)} is not {words}"
    return None


_KEY_VERDICT: dict[str, str | None] = {}
_VALUE_OK: dict[str, bool] = {}
_PORT_NAME_OK: dict[str, bool] = {}


def qualified_name_problem(key: str) -> str | None:
    """Why a label or annotation key is not a qualified name (``[prefix/]name``), or None."""
    try:
        return _KEY_VERDICT[key]
    except KeyError:
        pass
    prefix, _, name = key.rpartition("/")
    why = None
    if prefix and (len(prefix) > 253 or _DNS1123_SUBDOMAIN(prefix) is None):
        why = f"key {show(key)}: prefix {show(prefix)} is not a DNS-1123 subdomain"
    elif not name or len(name) > 63 or _QUALIFIED_PART(name) is None:
        why = (f"key {show(key)} is not a qualified name (at most 63 letters, digits, '-', '_', '.', "
               "starting and ending with a letter or digit, optionally prefixed by a DNS subdomain and '/')")
    remember(_KEY_VERDICT, key, why)
    return why


def label_value_problem(value: str) -> str | None:
    """Why a label value is not valid, or None (the empty value is valid)."""
    if not value or value in _VALUE_OK:
        return None
    if len(value) > 63 or _QUALIFIED_PART(value) is None:
        return (f"label value {show(value)} is not valid (at most 63 letters, digits, "
                "'-', '_', '.', starting and ending with a letter or digit)")
    remember(_VALUE_OK, value)
    return None


def port_name_problem(name: str) -> str | None:
    """Why a port name is not an IANA service name (``IsValidPortName``), or None."""
    if name in _PORT_NAME_OK:
        return None
    if not (0 < len(name) <= 15 and _DNS1123_LABEL(name) is not None and "--" not in name
            and any(c.isalpha() for c in name)):
        return (f"port name {show(name)} is not an IANA service name (at most 15 lowercase letters, digits "
                "and '-', with at least one letter)")
    remember(_PORT_NAME_OK, name)
    return None


def show_labels(labels: dict[str, Any]) -> str:
    """``a=b, c=d`` (sorted), or ``none``: how messages show a label map or selector."""
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items(), key=lambda kv: str(kv[0]))) or "none"


__all__ = [
    "NAME_FORMAT",
    "NAME_FORMATS",
    "check_name",
    "is_config_key",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_percent",
    "label_value_problem",
    "port_name_problem",
    "qualified_name_problem",
    "remember",
    "show_labels",
]
