"""YAML as kubectl reads it: go-yaml v2's scalars and keys, and a reader that applies them.

``kubectl`` reads YAML through go-yaml v2 (YAML 1.1-ish: ``yes``/``on``/``y`` are booleans,
``0755`` is octal, timestamps stay strings; ``sigs.k8s.io/yaml`` then makes every key a
string) and rejects duplicate keys. yaml-rs, the fast reader (:mod:`.reader`), implements
YAML 1.2, so this module holds the difference:

* :func:`resolve_go_yaml` and :func:`json_key`: what go-yaml makes of a plain scalar, and of a key;
* :func:`may_differ`: the pre-scan that finds the documents where the two readers may
  disagree (it may over-match, never under-match);
* :func:`parse_slow`: PyYAML's C composer plus go-yaml resolution, with the line of every
  path and duplicate keys as problems: for those documents, for syntax errors (it says
  where), and without yaml-rs.
"""

from __future__ import annotations

import math
import re

from dockyard_k8s.pyyaml import PLAIN_TAG, compose_loader
from dockyard_k8s.validate.problem import RULE_YAML, JsonPath, Problem

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (plain.py says why)
if TYPE_CHECKING:
    from typing import Any

_TRUE = frozenset(["y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"])
_FALSE = frozenset(["n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"])
_NULL = frozenset(("", "~", "null", "Null", "NULL"))
_GO_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_GO_INT = re.compile(r"^[-+]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$")
_INF = {".inf": math.inf, ".Inf": math.inf, ".INF": math.inf, "+.inf": math.inf, "+.Inf": math.inf,
        "+.INF": math.inf, "-.inf": -math.inf, "-.Inf": -math.inf, "-.INF": -math.inf}


def resolve_go_yaml(text: str) -> Any:
    """What go-yaml v2 (kubectl) makes of an untagged plain scalar, as JSON-able data."""
    if text in _NULL:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    first = text[0]
    if not (first.isdigit() or first in "+-."):
        return text
    if text in _INF:
        return _INF[text]
    if text in (".nan", ".NaN", ".NAN"):
        return math.nan
    plain = text.replace("_", "")
    if _GO_INT.match(plain):  # strconv.ParseInt(plain, 0, 64): 0x, 0o, 0b and leading-0 octal
        sign = -1 if plain[0] == "-" else 1
        digits = plain.lstrip("+-")
        low = digits.lower()
        if low.startswith(("0x", "0o", "0b")):
            return sign * int(digits[2:], {"x": 16, "o": 8, "b": 2}[low[1]])
        if len(digits) > 1 and digits[0] == "0":
            return sign * int(digits, 8)
        return sign * int(digits)
    if _GO_FLOAT.match(plain):
        value = float(plain)
        return int(value) if value.is_integer() and "." not in plain and "e" not in plain.lower() else value
    return text


# --- PyYAML's composer + go-yaml resolution, with lines -------------------------------------

_STR = "tag:yaml.org,2002:str"


class _Builder:
    """Node tree -> data with go-yaml v2 semantics, duplicate keys and line marks."""

    def __init__(self, offset: int = 0) -> None:
        self.errors: list[tuple[JsonPath, int, str]] = []  # (path, line, message)
        self.lines: dict[JsonPath, int] = {}
        self.offset = offset  # lines before the parsed text in its file

    def build(self, node: Any, path: JsonPath) -> Any:
        import yaml

        self.lines.setdefault(path, node.start_mark.line + 1 + self.offset)  # an entry already has its key line
        if isinstance(node, yaml.ScalarNode):
            value, why = scalar_value(node)
            if why:
                self.errors.append((path, node.start_mark.line + 1 + self.offset, why))
            return value
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        out: dict[str, Any] = {}
        first: dict[str, int] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == "<<" and not key_node.style:
                sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                for src in sources:
                    merged = self.build(src, path)
                    if isinstance(merged, dict):
                        for k, v in merged.items():
                            out.setdefault(k, v)
                continue
            key = self.build(key_node, path) if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key_node, yaml.ScalarNode):
                self.errors.append((path, key_node.start_mark.line + 1 + self.offset, "mapping keys must be scalars"))
                continue
            name = json_key(key)
            line = key_node.start_mark.line + 1 + self.offset
            if name in first:
                self.errors.append(((*path, name), line,
                                    f"duplicate key {name!r} (first defined on line {first[name]})"))
                continue
            first[name] = line
            self.lines[(*path, name)] = line
            out[name] = self.build(value_node, (*path, name))
        return out


def scalar_value(node: Any) -> tuple[Any, str | None]:
    """What go-yaml makes of a scalar node (composed by :func:`compose_loader`), and the problem
    with it (an unsupported tag: the node's text is kept) or None."""
    if node.tag == PLAIN_TAG and not node.style:
        return resolve_go_yaml(node.value), None
    if node.tag in (_STR, PLAIN_TAG):
        return node.value, None
    if node.tag == "tag:yaml.org,2002:binary":
        return node.value.replace("\n", "").replace(" ", ""), None
    if node.tag.rsplit(":", 1)[-1] in ("int", "float", "bool", "null"):
        return resolve_go_yaml(node.value), None
    return node.value, f"unsupported tag {node.tag}"


def json_key(key: Any) -> str:
    """sigs.k8s.io/yaml turns non-string keys into their JSON text (``true``, ``1``)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


def parse_slow(text: str, file: str, offset: int = 0) -> tuple[list[tuple[Any, int, dict[JsonPath, int]]],
                                                                list[Problem]]:
    """Every document of ``text``: (data, first line, line of each path), and YAML problems.

    ``offset`` is the number of lines before ``text`` in its file (for one document of many).
    """
    import yaml

    docs: list[tuple[Any, int, dict[JsonPath, int]]] = []
    problems: list[Problem] = []
    loader = compose_loader()(text)
    index = 0
    try:
        while loader.check_node():
            node = loader.get_node()
            if isinstance(node, yaml.ScalarNode) and node.value == "" and node.tag == PLAIN_TAG and not node.style:
                continue  # an empty document ("---" twice): the fast splitter skips it too
            builder = _Builder(offset)
            data = builder.build(node, ())
            for path, line, message in builder.errors:
                problems.append(Problem(file, index, "", "", path, message, rule=RULE_YAML, line=line))
            docs.append((data, node.start_mark.line + 1 + offset, builder.lines))
            index += 1
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        what = " ".join(x for x in (e.context, e.problem) if x) or "invalid YAML"
        col = f", column {mark.column + 1}" if mark else ""
        problems.append(Problem(file, index, "", "", (), f"invalid YAML: {what}{col}", rule=RULE_YAML,
                                line=mark.line + 1 + offset if mark else 0))
    except yaml.YAMLError as e:
        problems.append(Problem(file, index, "", "", (), f"invalid YAML: {e}", rule=RULE_YAML))
    finally:
        loader.dispose()
    return docs, problems


# --- which documents need this reader: the pre-scan -----------------------------------------

# Plain scalars whose go-yaml v2 meaning may differ from YAML 1.2: 1.1 booleans and
# leading-zero / underscore / binary / octal numbers, as a value (": x"), a block sequence
# item ("- x") or a flow item ("[x", ", x"); numeric keys (go-yaml makes them strings, yaml-rs
# ints); merge keys and tags. Each pattern starts with a literal so the scan runs at memchr
# speed (one alternation of everything is many times slower).
_WORD = r"(?:[yYnN]|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF)"
_NUMBER = r"[-+]?0[0-9_]|[-+]?[0-9]+_|[-+]?0[bBoO]"
# Every colon, in one pass (a literal first character: the scan runs at memchr speed), for
# a value (": yes", ": 0755"); a key go-yaml v2 reads as a boolean (`on:` is the key "true") or
# YAML 1.2 reads as a boolean or null (`true:`, `~:`; kubectl makes them strings), found by
# looking back, first at the one character before the colon (most keys end with none of these
# words' last letters), then at the word; a `key :` (rare: the slow path reads it); and a colon
# after a digit, which may end a key go-yaml reads as a number (`010:` is the key "8"), checked
# by hand (group "digit"). Over-matching only costs a slower read.
_COLON = re.compile(
    r":(?:[ \t]+(?:" + _WORD + r"[ \t]*(?:$|[#,\]}])|" + _NUMBER + ")"
    r"|(?<=[yYnNoOsSfFeElL~]:)(?:(?<=[\s{,\[][yYnN~]:)|(?<=[\s{,\[](?:no|No|NO|on|On|ON):)"
    r"|(?<=[\s{,\[](?:yes|Yes|YES|off|Off|OFF):)"
    r"|(?<=[\s{,\[](?:true|True|TRUE|null|Null|NULL|\.inf|\.Inf|\.INF|\.nan|\.NaN|\.NAN):)"
    r"|(?<=[\s{,\[](?:false|False|FALSE|[-+]\.inf|[-+]\.Inf|[-+]\.INF):))"
    r"|(?<=[ \t]:)"
    r"|(?P<digit>(?<=[0-9_.]:)(?=[ \t\r\n,}\]]|$)))", re.M)
_CANDIDATES = (
    re.compile(r"-[ \t]+(?:" + _WORD + r"[ \t]*(?:$|[#,\]}])|" + _NUMBER + ")", re.M),
    re.compile(r"\[[ \t]*(?:" + _WORD + r"[ \t]*[,\]:]|" + _NUMBER + ")"),
    re.compile(r",[ \t]*(?:" + _WORD + r"[ \t]*[,\]}:]|" + _NUMBER + ")"),
    re.compile(r"\{[ \t]*(?:" + _WORD + r"[ \t]*[,}:]|" + _NUMBER + ")"),
    # a document that is one plain scalar (documents are joined with "---\n")
    re.compile(r"---\n(?:" + _WORD + r"[ \t]*(?:$|#)|" + _NUMBER + ")", re.M),
    re.compile(r"<<[ \t]*:"),
    # a hexadecimal key (yaml-rs reads `0x1F:` as the key 31; kubectl as "31")
    re.compile(r"0[xX][0-9a-fA-F_]*:(?=[ \t\r\n]|$)", re.M),
)
# A key token (after a space, "{", "[" or ",") that YAML 1.2 or go-yaml may read as a number:
# kubectl makes it a string ("80", "8" for 010), yaml-rs an int or float.
_KEY_NUMBER_START = re.compile(r"[-+]?\.?[0-9]")


def _colon_candidate(text: str) -> bool:
    for m in _COLON.finditer(text):
        if m.group("digit") is None:
            return True
        at = m.start()  # a colon after a digit: is the key before it a go-yaml number?
        begin = max(text.rfind(c, 0, at) for c in " \t\n{[,") + 1
        if _KEY_NUMBER_START.match(text, begin, at):
            return True
    return False


def _has_tag(text: str) -> bool:
    """A ``!tag`` (``!`` after whitespace or a flow/block indicator); ``!`` inside words is fine."""
    at = text.find("!")
    while at != -1:
        if at == 0 or text[at - 1] in " \t\n[{,:-":
            return True
        at = text.find("!", at + 1)
    return False


def may_differ(text: str) -> bool:
    """Whether ``text`` (one or more documents, joined by ``---`` lines) may hold a scalar or
    key go-yaml reads differently from YAML 1.2, a tag or a merge key. It may over-match (a
    slower read), never under-match."""
    text = "---\n" + text
    return _colon_candidate(text) or any(p.search(text) for p in _CANDIDATES) or _has_tag(text)
