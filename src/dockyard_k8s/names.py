"""The name grammars of Kubernetes, in one place: what the API server accepts as a name, a label
key or value, a data key or an environment variable name.

Source: ``k8s.io/apimachinery/pkg/util/validation`` (``IsDNS1123Label``,
``IsDNS1123Subdomain``, ``IsDNS1035Label``, ``IsQualifiedName``, ``IsValidLabelValue``,
``IsValidPortName``, ``IsConfigMapKey``, ``IsEnvVarName``). The ``*_FMT`` texts are apimachinery's
own (the config schema anchors them as JSON-Schema patterns); ``is_*`` say yes or no with the length
limit, as the ``Is*`` functions do; the ``*_problem`` functions and :func:`check_name` say why a value
is wrong, in words, or None. Every check of a name (config, validate, the command line, ``dev``) comes
here; a new grammar goes here, with its source.

Label keys and values and port names repeat on every object of a large input, so their
verdicts are cached (``functools.lru_cache``, bounded).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from dockyard_k8s.plain import show

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + r"(\." + DNS1123_LABEL_FMT + ")*"
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"  # a label key's name part, a label value
# A non-empty label value with its 63-character bound in the regex: for JSON-Schema patterns editors read.
BOUNDED_LABEL_VALUE_FMT = "[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
ENV_VAR_NAME_FMT = "[-._a-zA-Z][-._a-zA-Z0-9]*"
DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63  # also a label value's
CONFIG_KEY_MAX = 253

# The grammars alone, without the length limit (for messages that say the length apart).
match_dns1123_label = re.compile(DNS1123_LABEL_FMT).fullmatch
match_dns1123_subdomain = re.compile(DNS1123_SUBDOMAIN_FMT).fullmatch
match_dns1035_label = re.compile(DNS1035_LABEL_FMT).fullmatch
match_qualified_name = re.compile(QUALIFIED_NAME_FMT).fullmatch
match_env_var_name = re.compile(ENV_VAR_NAME_FMT).fullmatch
_CONFIG_KEY = re.compile(CONFIG_KEY_FMT).fullmatch

# Name formats: (maximum length, grammar, how to say it).
NAME_FORMATS = {
    "dns1035": (DNS1123_LABEL_MAX, match_dns1035_label,
                "a DNS-1035 label (lowercase letters, digits, '-', starting with a letter)"),
    "dns1123label": (DNS1123_LABEL_MAX, match_dns1123_label, "a DNS-1123 label (lowercase letters, digits, '-')"),
    "dns1123subdomain": (DNS1123_SUBDOMAIN_MAX, match_dns1123_subdomain,
                         "a DNS-1123 subdomain (lowercase letters, digits, '-', '.')"),
}
# Object names whose format differs from the default (DNS-1123 subdomain), by kind.
NAME_FORMAT = {
    "Service": "dns1035",  # becomes a DNS label of the cluster domain
    "Namespace": "dns1123label",
}

def is_dns1123_label(text: str) -> bool:
    """``IsDNS1123Label``: ``[a-z0-9]([-a-z0-9]*[a-z0-9])?``, at most 63 characters."""
    return len(text) <= DNS1123_LABEL_MAX and match_dns1123_label(text) is not None


def is_dns1123_subdomain(text: str) -> bool:
    """``IsDNS1123Subdomain``: dot-separated DNS-1123 labels, at most 253 characters."""
    return len(text) <= DNS1123_SUBDOMAIN_MAX and match_dns1123_subdomain(text) is not None


def is_qualified_name(text: str) -> bool:
    """``IsQualifiedName``: a label or annotation key, ``[prefix/]name``; a prefix, when there is a
    '/', is a non-empty DNS-1123 subdomain; the name at most 63 characters."""
    return qualified_name_problem(text) is None


def is_label_value(text: str) -> bool:
    """``IsValidLabelValue``: empty, or at most 63 characters of the qualified-name grammar."""
    return label_value_problem(text) is None


def is_env_var_name(text: str) -> bool:
    """``IsEnvVarName``: letters, digits, '_', '-' and '.', not starting with a digit."""
    return match_env_var_name(text) is not None


def is_config_key(text: str) -> bool:
    """``IsConfigMapKey``: a ConfigMap/Secret data key, letters, digits, ``-``, ``_``, ``.``; at most 253."""
    return 0 < len(text) <= CONFIG_KEY_MAX and _CONFIG_KEY(text) is not None


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


@lru_cache(maxsize=8192)
def qualified_name_problem(key: str) -> str | None:
    """Why a label or annotation key is not a qualified name (``[prefix/]name``), or None."""
    prefix, slash, name = key.rpartition("/")
    if slash and not prefix:  # apimachinery: "prefix part must be non-empty"
        return f"key {show(key)}: the prefix before '/' is empty"
    if prefix and not is_dns1123_subdomain(prefix):
        return f"key {show(key)}: prefix {show(prefix)} is not a DNS-1123 subdomain"
    if not name or len(name) > QUALIFIED_NAME_MAX or match_qualified_name(name) is None:
        return (f"key {show(key)} is not a qualified name (at most 63 letters, digits, '-', '_', '.', "
                "starting and ending with a letter or digit, optionally prefixed by a DNS subdomain and '/')")
    return None


@lru_cache(maxsize=8192)
def label_value_problem(value: str) -> str | None:
    """Why a label value is not valid, or None (the empty value is valid)."""
    if value and (len(value) > QUALIFIED_NAME_MAX or match_qualified_name(value) is None):
        return (f"label value {show(value)} is not valid (at most 63 letters, digits, "
                "'-', '_', '.', starting and ending with a letter or digit)")
    return None


@lru_cache(maxsize=8192)
def port_name_problem(name: str) -> str | None:
    """Why a port name is not an IANA service name (``IsValidPortName``), or None."""
    if not (0 < len(name) <= 15 and match_dns1123_label(name) is not None and "--" not in name
            and any(c.isalpha() for c in name)):
        return (f"port name {show(name)} is not an IANA service name (at most 15 lowercase letters, digits "
                "and '-', with at least one letter)")
    return None


def show_labels(labels: dict[str, Any]) -> str:
    """``a=b, c=d`` (sorted), or ``none``: how messages show a label map or selector."""
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items(), key=lambda kv: str(kv[0]))) or "none"

