"""YAML as kubectl reads it: the go-yaml reader of ``validate``, and the pre-scan for yaml-rs.

``kubectl`` reads YAML through go-yaml v2 (YAML 1.1-ish: ``yes``/``on``/``y`` are booleans,
``0755`` is octal, timestamps stay strings; ``sigs.k8s.io/yaml`` then makes every key a
string) and rejects duplicate keys: :data:`dockyard_k8s.yamlfile.KUBECTL`. yaml-rs, the fast
reader (:mod:`.reader`), implements YAML 1.2, so this module holds the difference:

* :func:`may_differ`: the pre-scan that finds the documents where the two readers may
  disagree (it may over-match, never under-match);
* :func:`parse_slow`: :func:`dockyard_k8s.yamlfile.load_all` with kubectl's scalars, its
  problems (duplicate keys, tags, syntax errors: it says where) as validate's: for those
  documents, for syntax errors, and without yaml-rs.
"""

from __future__ import annotations

import re

from dockyard_k8s.validate.problem import RULE_YAML, Problem
from dockyard_k8s.yamlfile import Document, load_all


def parse_slow(text: str, file: str, offset: int = 0) -> tuple[list[Document], list[Problem]]:
    """Every document of ``text`` (empty ones skipped), and its YAML problems.

    ``offset`` is the number of lines before ``text`` in its file (for one document of many).
    """
    loaded = load_all(text, file, offset=offset)
    problems = [Problem(file, p.doc, "", "", p.path, p.message, rule=RULE_YAML, line=p.mark.line)
                for p in loaded.problems]
    if loaded.error is not None:
        m = loaded.error.mark
        col = f", column {m.col}" if m.line else ""
        problems.append(Problem(file, loaded.error.doc, "", "", (), f"invalid YAML: {loaded.error.message}{col}",
                                rule=RULE_YAML, line=m.line))
    return loaded.documents, problems


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
