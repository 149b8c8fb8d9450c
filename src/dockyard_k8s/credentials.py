"""What counts as a credential: names that announce one, values shaped like one.

The one home of it: lint's ``secret-in-env`` rule (rendered env values), the launch record's
redaction (:func:`redact`, ``render/record.py``), ``check``'s refusal of secrets by value (an infra env, a recipe
override, the entrypoint: ``config/rules.py``, ``config/loader.py``) and ``serve check``'s
(``config/serve.py``). Pure and cheap to import (``check`` imports it).
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from dockyard_k8s.plain import Path

REDACTED = "<redacted>"
# Keys whose values are environment variables: a map (NAME: value) or Kubernetes' [{name, value}].
ENV_KEYS = frozenset({"env", "env_vars", "envVars", "secretEnv"})

# Names that announce a credential: the name's head -- its last word, split at '_', '-', '.' and
# lowerCase-UpperCase boundaries, trailing digits aside -- is one of these words, or its last two
# words one of these pairs. The head, as in English compounds: HF_TOKEN, auth_token and
# WANDB_API_KEY are credentials; token_budget, max_tokens, tokenizer, TOKENIZERS_PARALLELISM and
# HF_TOKEN_PATH are about tokens, not tokens (tests/unit/config/test_secrets_by_value.py).
_SECRET_WORDS = frozenset({"PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "TOKEN", "APIKEY", "CREDENTIAL",
                           "CREDENTIALS", "PRIVATEKEY", "SECRETKEY", "ACCESSKEY"})
_SECRET_PAIRS = frozenset({("API", "KEY"), ("ACCESS", "KEY"), ("PRIVATE", "KEY"), ("SECRET", "KEY"),
                           ("AUTH", "KEY"), ("SIGNING", "KEY")})
# ...unless its first word says it holds something else: where the credential is, or a setting
# about it (MAX_TOKEN, PATH_TO_TOKEN).
_NOT_A_SECRET_WORDS = frozenset({"FILE", "PATH", "DIR", "URL", "URI", "ENDPOINT", "ID", "NAME", "ENABLED", "TTL",
                                 "TIMEOUT", "HEADER", "TYPE", "LIMIT", "COUNT", "SIZE", "LEN", "LENGTH", "MAX",
                                 "MIN", "NUM"})
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# Values that are a credential whatever their name: the token formats of the services RL runs use.
SECRET_VALUE = (
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), "an AWS access key id"),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"), "a GitHub token"),
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), "a Hugging Face token"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{20,}\b"), "an API secret key"),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"), "a Slack token"),
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"), "a private key"),
)


# The variable a token of a known kind is conventionally read from (a key that names no credential,
# ``hub: hf_...``, says nothing better).
_TOKEN_ENV = {"an AWS access key id": "AWS_ACCESS_KEY_ID", "a GitHub token": "GITHUB_TOKEN",
              "a Hugging Face token": "HF_TOKEN", "a Slack token": "SLACK_TOKEN"}
_FILE_PATH = re.compile(r"(?:/|~/)[^\s:;]+")  # an absolute path (or ~/...), one word
# A whole value that refers to a variable resolved where it is used, not a value: $VAR, ${...}
# (OmegaConf's ${oc.env:VAR} too), $(VAR) (Kubernetes).
_REFERENCE = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|\{[^{}]+\}|\([^()]+\))")


def looks_like_credential(name: str) -> bool:
    """Whether a name (an env var, a config key) announces a credential (see ``_SECRET_WORDS``)."""
    words = [w.upper() for w in _WORD.findall(name)]
    while words and words[-1].isdigit():  # HF_TOKEN_2
        words.pop()
    if not words or words[0] in _NOT_A_SECRET_WORDS:
        return False
    return words[-1] in _SECRET_WORDS or tuple(words[-2:]) in _SECRET_PAIRS


def token_in(text: str) -> str | None:
    """What credential ``text`` holds by its shape (``a Hugging Face token``...), or None."""
    return next((label for pattern, label in SECRET_VALUE if pattern.search(text)), None)


def secret_by_value(name: str, value: Any) -> str | None:
    """What ``value`` written under ``name`` is, when it is a credential by value: the token it is
    shaped like, or ``a credential`` when its name announces one. None for no value (null, empty,
    a mapping or list), a reference (``$(VAR)``, ``$VAR``, ``${oc.env:VAR}``), or anything else."""
    if value is None or isinstance(value, (dict, list, bool)):
        return None
    text = str(value)
    if not text or text.startswith("$(") or _REFERENCE.fullmatch(text.strip()):
        return None
    # a credential's name given a file's path is where the credential is, mounted from a Secret
    # (GOOGLE_APPLICATION_CREDENTIALS=/var/secrets/google/key.json, as Google documents it)
    named = looks_like_credential(name) and not _FILE_PATH.fullmatch(text)
    return token_in(text) or ("a credential" if named else None)


def secret_values(value: Any, path: Path) -> list[tuple[Path, str]]:
    """(path, what) of every credential by value in ``value`` written at ``path`` (a recipe
    override, a ``--set``): each scalar is judged with the key it sits under."""
    if isinstance(value, dict):
        return [hit for k, v in value.items() for hit in secret_values(v, (*path, str(k)))]
    if isinstance(value, list):
        return [hit for i, v in enumerate(value) for hit in secret_values(v, (*path, i))]
    name = next((p for p in reversed(path) if isinstance(p, str)), "")
    what = secret_by_value(name, value)
    return [(path, what)] if what else []


_PLACEHOLDER = re.compile(r"\{[A-Za-z_]+\}")  # {recipe}: the launcher's, never a value


def command_secrets(command: str, *, depth: int = 0) -> list[tuple[str, str]]:
    """(the flag or key that names it, or "" for none; what) of every credential by value in a
    shell command line (``launch.entrypoint``): a flag, an ``ENV=`` assignment or a Hydra override
    whose name announces a credential, with a literal value (``--wandb-api-key=abc``, ``--hf-token
    abc``, ``WANDB_API_KEY=abc python ...``, ``logging.api_key=abc``), and any word shaped like a
    token. A reference (``$VAR``, ``"${VAR}"``, ``$(cat FILE)``) is how the fix reads it, not a value;
    ``bash -c '...'`` is looked into. Each is said once, without the value."""
    try:
        words = shlex.split(command)
    except ValueError:  # not shell words (an unbalanced quote): the shell refuses it anyway
        words = command.split()
    words = [w.rstrip(";&|") for w in words]
    found: list[tuple[str, str]] = []
    taken: set[int] = set()  # the words that were a flag's value
    for i, word in enumerate(words):
        if i in taken:
            continue
        if depth < 2 and len(word.split()) > 1:  # a command in one word: sh -c '...'
            found += command_secrets(word, depth=depth + 1)
            continue
        name, sep, value = word.partition("=")
        following = words[i + 1] if i + 1 < len(words) else ""
        if sep and name and not name.startswith("$"):  # --flag=value, VAR=value, a.b.c=value
            what = _literal_secret(name, value)
        elif (word.startswith("-") and looks_like_credential(word) and following and
              not following.startswith("-")):  # --flag value
            taken.add(i + 1)
            what = _literal_secret(word, following)
        else:
            name, what = "", token_in(word)
        if what and (name, what) not in found:
            found.append((name, what))
    return found


def _literal_secret(name: str, value: str) -> str | None:
    """What ``value`` given to the flag or key ``name`` on a command line is, when a credential."""
    if _PLACEHOLDER.fullmatch(value):
        return None
    return secret_by_value(name.lstrip("-+~"), value)


def tokens_in(data: Any, at: Path = ()) -> list[tuple[Path, str]]:
    """(path, what) of every string in ``data`` shaped like a token, whatever its key."""
    if isinstance(data, dict):
        return [hit for k, v in data.items() for hit in tokens_in(v, (*at, k))]
    if isinstance(data, list):
        return [hit for i, v in enumerate(data) for hit in tokens_in(v, (*at, i))]
    what = token_in(data) if isinstance(data, str) else None
    return [(at, what)] if what else []


def secrets_in_env(data: Any, at: Path = ()) -> list[tuple[Path, str, str]]:
    """(path of the value, variable name, what) of every credential by value in an environment
    anywhere in ``data``: maps under ``env``/``env_vars``/``envVars`` and Kubernetes env lists
    (``secretEnv`` holds references, never values)."""
    out: list[tuple[Path, str, str]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            here = (*at, key)
            if key in ENV_KEYS and key != "secretEnv" and isinstance(value, dict):
                out += [((*here, name), str(name), what) for name, v in value.items()
                        if (what := secret_by_value(str(name), v))]
            elif key in ENV_KEYS and isinstance(value, list):
                out += [((*here, i, "value"), str(item.get("name", "")), what) for i, item in enumerate(value)
                        if isinstance(item, dict) and (what := secret_by_value(str(item.get("name", "")),
                                                                                item.get("value")))]
            else:
                out += secrets_in_env(value, here)
    elif isinstance(data, list):
        for i, item in enumerate(data):
            out += secrets_in_env(item, (*at, i))
    return out


def redact_assignment(text: str, *, always: bool = False) -> str:
    """``key.path=value`` (a --set or a recipe override) with the value redacted when the key
    names a credential, is an environment map or a variable of one, or the value is shaped like a
    token (or ``always``). A key deeper under an ``env`` (a recipe's ``env.code.sandbox_urls``)
    is no variable."""
    key, sep, value = text.partition("=")
    parts = [p for p in re.split(r"(?<!\\)\.", key.lstrip("+~")) if p]
    if sep and (always or any(looks_like_credential(p) for p in parts[-1:]) or
                _in_env(parts) or token_in(value)):
        return f"{key}={REDACTED}"
    return text


def _in_env(parts: list[str]) -> bool:
    """Whether a key path is an environment, a variable of one (``env.NAME``) or an item of a
    Kubernetes env list (``env.0``, ``env.0.value``)."""
    return any(p in ENV_KEYS for p in parts[-2:]) or (len(parts) >= 3 and parts[-3] in ENV_KEYS and
                                                      parts[-2].isdigit())


def secret_assignment(text: str) -> bool:
    """Whether ``key.path=value`` as typed (a --set, a recipe override) sets a credential by value."""
    key, sep, value = text.partition("=")
    parts = [p for p in re.split(r"(?<!\\)\.", key.lstrip("+~")) if p]
    return bool(sep) and secret_by_value(parts[-1] if parts else "", value) is not None


def env_name(name: str) -> str:
    """The environment variable a config key would be read from: ``wandb_api_key`` -> ``WANDB_API_KEY``."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name).upper() or "TOKEN"


def env_for(name: str, what: str) -> str:
    """The environment variable to read the credential ``what`` (``a Hugging Face token``) written
    under ``name`` (a key, a dotted path, a ``--flag``) from: the key's own name when it names a
    credential (``--wandb-api-key`` -> ``WANDB_API_KEY``), else the token's usual variable
    (``HF_TOKEN``), else the key's name."""
    words = re.findall(r"[A-Za-z0-9_-]+", re.split(r"(?<!\\)\.", name)[-1])
    key = words[-1].lstrip("-") if words else ""
    if key and looks_like_credential(key):
        return env_name(key)
    return _TOKEN_ENV.get(what) or env_name(key)


def redact(value: Any, *, env: bool = False) -> Any:
    """A copy of plain data with every secret-bearing value replaced by ``<redacted>``: every value
    of an environment map (names are kept; ``valueFrom`` references too), every string under a key
    that names a credential, and every string shaped like a token, whatever its key. Booleans,
    numbers and nulls are settings, kept (``automountServiceAccountToken: false``)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            key = str(k)
            if env and not isinstance(v, (dict, list)):
                out[key] = REDACTED if v is not None else None
            elif looks_like_credential(key) and isinstance(v, str):
                out[key] = REDACTED
            else:
                out[key] = redact(v, env=key in ENV_KEYS)
        return out
    if isinstance(value, list):
        if env:  # [{name, value}] as Kubernetes writes env
            return [{**item, "value": REDACTED} if isinstance(item, dict) and "value" in item else redact(item)
                    for item in value]
        return [redact(v) for v in value]
    if isinstance(value, str) and token_in(value):
        return REDACTED
    return value
