"""Environment variables: secrets written as literals, names defined twice."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from dockyard_k8s.lint.model import ERROR, Context, Hit, Obj, Rule
from dockyard_k8s.lint.rules._util import cname

# Names that announce a credential: one of these words (or word pairs) in the name, split at
# '_', '-', '.' and lowerCase-UpperCase boundaries. A word, not a substring: TOKENIZERS_PARALLELISM
# and MAX_NEW_TOKENS are not credentials, HF_TOKEN and GITHUB_TOKEN are.
_SECRET_WORDS = frozenset({"PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "TOKEN", "APIKEY", "CREDENTIAL",
                           "CREDENTIALS", "PRIVATEKEY", "SECRETKEY", "ACCESSKEY"})
_SECRET_PAIRS = frozenset({("API", "KEY"), ("ACCESS", "KEY"), ("PRIVATE", "KEY"), ("SECRET", "KEY"),
                           ("AUTH", "KEY"), ("SIGNING", "KEY")})
# ...unless the name says it holds something else: where the credential is, or a setting about it.
_NOT_A_SECRET_WORDS = frozenset({"FILE", "PATH", "DIR", "URL", "URI", "ENDPOINT", "ID", "NAME", "ENABLED", "TTL",
                                 "TIMEOUT", "HEADER", "TYPE", "LIMIT", "COUNT", "SIZE", "LEN", "LENGTH", "MAX",
                                 "MIN", "NUM"})
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SECRET_VALUE = (
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), "an AWS access key id"),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"), "a GitHub token"),
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), "a Hugging Face token"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{20,}\b"), "an API secret key"),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"), "a Slack token"),
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"), "a private key"),
)


def looks_like_credential(name: str) -> bool:
    """Whether an env var name announces a credential (see ``_SECRET_WORDS``)."""
    words = [w.upper() for w in _WORD.findall(name)]
    if not words or _NOT_A_SECRET_WORDS & {words[0], words[-1]}:
        return False
    return bool(_SECRET_WORDS & set(words)) or any(pair in _SECRET_PAIRS for pair in itertools.pairwise(words))


def secrets_in_env(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        for path, k in pod.containers():
            for i, e in enumerate(k.get("env") or []):
                if not isinstance(e, dict) or "value" not in e:
                    continue
                name, value = str(e.get("name", "")), str(e.get("value") or "")
                if not value or value.startswith("$("):
                    continue
                what = next((label for pattern, label in _SECRET_VALUE if pattern.search(value)), None)
                if what:
                    yield Hit((*path, "env", i, "value"),
                              f"container {cname(k)!r}: env {name} holds {what} as a literal value")
                elif looks_like_credential(name):
                    yield Hit((*path, "env", i, "value"),
                              f"container {cname(k)!r}: env {name} looks like a credential written as a literal value")


def duplicate_env(o: Obj, c: Context) -> Iterator[Hit]:
    for pod in o.pods:
        for path, k in pod.containers():
            seen: dict[str, int] = {}
            for i, e in enumerate(k.get("env") or []):
                if not isinstance(e, dict):
                    continue
                name = str(e.get("name", ""))
                if name in seen:
                    yield Hit((*path, "env", i), f"container {cname(k)!r}: env {name} is defined twice "
                                                 f"(entries {seen[name]} and {i}); the last one wins silently")
                else:
                    seen[name] = i


RULES = (
    Rule("secret-in-env", ERROR, "Credentials must not be written as literal environment values",
         "A literal env value is stored in the manifest, the rendered files in git, the API server and every "
         "`kubectl get -o yaml`. Fix: keep the credential in a Secret and reference it with "
         "valueFrom.secretKeyRef (as the example does for WANDB_API_KEY).",
         ("kube-linter env-var-secret", "Polaris sensitiveContainerEnvVar", "Checkov"), secrets_in_env),
    Rule("duplicate-env", ERROR, "A container must not define an environment variable twice",
         "When an env name appears twice the last entry wins without a warning, so a value set in one place (a "
         "fleet's env, kuberay.spec, an overlay) is silently overridden by another. Fix: keep one entry per name.",
         ("kube-linter duplicate-env-var",), duplicate_env),
)
