"""Credentials: which variables hold one (by name or by value), and keeping them from the model.

A variable is a credential when its name says so, as a class of spellings rather than a list
(`is_secret_name`: any case, `_`, `-` or camelCase between words), or when its value has the
shape of one whatever its name (`is_secret_value`: a URL with a password, a private key, a
token of a well-known service). Where the line is drawn, and why, is in the comments below;
`tests/shell/test_secret_names.py` holds the table of both sides.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable, Mapping

# Credentials of aimon itself: never in a model's command, whatever the settings say.
PROVIDER_KEYS = frozenset({"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"})
# Shorter values would redact ordinary words and numbers.
MIN_SECRET_LENGTH = 8

SecretPairs = tuple[tuple[str, str], ...]
"""(name, value) of known credentials, longest value first: what `redact` replaces."""

# A name's words: split at anything not a letter or digit and at camelCase humps
# (`npm_config__authToken` → NPM CONFIG AUTH TOKEN, `APIKey` → API KEY).
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

# Kinds of key: `<kind>_KEY` (or `<kind>KEY` run together) is a credential anywhere in a name,
# so AWS_ACCESS_KEY_ID and API_KEY_2 count. A lone KEY counts only as the last word
# (STRIPE_KEY, PUBLIC_KEY too: a public key is held back with the rest; pass it through).
_KEY_KINDS = ("ACCESS", "ACCOUNT", "ADMIN", "API", "AUTH", "CLIENT", "DEPLOY", "ENCRYPTION",
              "LICENSE", "MASTER", "PRIVATE", "SECRET", "SERVICE", "SESSION", "SIGNING", "SSH",
              "STORAGE")
# Inside any word: PGPASSWORD, DBPASSWD, CLIENTSECRET, OPENAIAPIKEY, ...
_CONTAINED = ("PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "CREDENTIAL", "AUTHORIZATION",
              *(kind + "KEY" for kind in _KEY_KINDS))
# Whole words that name a bearer credential: a JSON web token, a Sentry DSN (it holds the key),
# a webhook URL (whoever has it may post), a cookie, a connection string.
_CREDENTIAL_WORDS = frozenset({"JWT", "DSN", "WEBHOOK", "WEBHOOKS", "COOKIE", "COOKIES",
                               "CONNSTR"})
# AUTH is a credential as the last word (NPM_CONFIG__AUTH, BASIC_AUTH) or before one of these;
# not before SOCK, URL, TYPE, METHOD, DOMAIN (SSH_AUTH_SOCK, OS_AUTH_URL: where, not what).
_AUTH_PAYLOADS = frozenset({"HEADER", "HEADERS", "STRING", "CONFIG", "INFO", "DATA", "VALUE"})
# Services whose variables are all secrets or point at one (SLACK_WEBHOOK_URL, STRIPE_SK).
_SERVICES = frozenset({"SLACK", "STRIPE"})

# Values that are credentials whatever the name: a URL with a password in it (DATABASE_URL,
# HTTPS_PROXY), a private key, and tokens of well-known services by their documented prefixes.
_URL_PASSWORD = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]*:([^\s/@]+)@")
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_TOKEN = re.compile(r"""(?x)\b(?:
      sk-ant-[A-Za-z0-9_-]{20,}                          # Anthropic
    | sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}    # OpenAI
    | gh[pousr]_[A-Za-z0-9]{30,} | github_pat_[A-Za-z0-9_]{30,}
    | glpat-[A-Za-z0-9_-]{20,}                           # GitLab
    | xox[abposr]-[A-Za-z0-9-]{10,}                      # Slack
    | (?:AKIA|ASIA)[A-Z0-9]{16}                          # AWS access key ids
    | hf_[A-Za-z0-9]{30,} | npm_[A-Za-z0-9]{30,}
    | [rs]k_(?:live|test)_[A-Za-z0-9]{16,}               # Stripe
    | AIza[0-9A-Za-z_-]{35} | ya29\.[0-9A-Za-z_-]{20,}   # Google
    | eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}  # a JWT
)""")


def name_words(name: str) -> tuple[str, ...]:
    """Return the words of a variable name, upper-cased."""
    return tuple(word.upper() for word in _WORD.findall(name))


def _word_is_secret(words: tuple[str, ...], index: int) -> bool:
    word = words[index]
    after = words[index + 1] if index + 1 < len(words) else None
    last = after is None
    return (
        any(part in word for part in _CONTAINED)
        # TOKEN, GHTOKEN, AUTHTOKEN; not MAX_TOKENS nor TOKENIZERS_PARALLELISM.
        or word.endswith("TOKEN")
        or word in _CREDENTIAL_WORDS
        or (word in ("KEY", "KEYS") and (last or (index > 0 and words[index - 1] in _KEY_KINDS)))
        or (word.endswith("AUTH") and (last or after in _AUTH_PAYLOADS))
        or (word == "CONNECTION" and after == "STRING")
        # GITHUB_PAT, MYSQL_PWD; never PWD itself nor OLDPWD, the working directories.
        or (last and index > 0 and word in ("PAT", "PWD"))
    )


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Return True if the variable `name` holds a credential by its name (any spelling)."""
    if name.upper() in PROVIDER_KEYS:
        return True
    words = name_words(name)
    if not words:
        return False
    return words[0] in _SERVICES or any(_word_is_secret(words, i) for i in range(len(words)))


def secret_parts(value: str) -> tuple[str, ...]:
    """Return the credentials inside `value`: passwords of URLs, tokens, private keys."""
    parts = [match.group(1) for match in _URL_PASSWORD.finditer(value)]
    parts += [match.group(0) for match in _TOKEN.finditer(value)]
    if _PRIVATE_KEY.search(value):
        # The whole key, and each line of its body: a key printed from its file, or
        # reflowed, still shows none of it.
        parts.append(value)
        parts += [line.strip() for line in value.splitlines()
                  if line.strip() and not line.startswith("-----") and ":" not in line]
    return tuple(parts)


def is_secret_value(value: str) -> bool:
    """Return True if `value` holds a credential by its shape, whatever its name."""
    return bool(secret_parts(value))


@functools.lru_cache(maxsize=4096)
def is_secret(name: str, value: str) -> bool:
    """Return True if the variable `name=value` holds a credential, by its name or value."""
    return is_secret_name(name) or is_secret_value(value)


def model_env(environ: Mapping[str, str], passthrough: Collection[str] = (), *,
              settings_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return the environment of a command run for the model.

    `environ` (aimon's) without credentials, then `settings_env` (the settings' `env`) under
    the same rule: a credential stays only if `passthrough` names it, and provider keys never
    do. Every process the model can start gets its environment from here: Bash, background
    jobs, and the `` !`cmd` `` lines of custom commands.
    """
    allowed = {name for name in passthrough if name.upper() not in PROVIDER_KEYS}

    def keep(name: str, value: str) -> bool:
        return name in allowed or not is_secret(name, value)

    env = {name: value for name, value in environ.items() if keep(name, value)}
    if settings_env:
        env.update((name, value) for name, value in settings_env.items() if keep(name, value))
    return env


def secret_values(*environs: Mapping[str, str]) -> SecretPairs:
    """Return (name, value) of every credential in `environs`, longest value first.

    A credential found inside a longer value (a URL's password) is listed on its own as well.
    Passed-through variables are included: a command may use them, the model need not read
    them.
    """
    return merge_secrets(
        (name, part)
        for environ in environs for name, value in environ.items() if is_secret(name, value)
        for part in (value, *secret_parts(value)) if len(part) >= MIN_SECRET_LENGTH)


def merge_secrets(*groups: Iterable[tuple[str, str]]) -> SecretPairs:
    """Return the pairs of `groups` as one list, each value once (its first name), longest
    first."""
    found: dict[str, str] = {}
    for group in groups:
        for name, value in group:
            found.setdefault(value, name)
    return tuple(sorted(((n, v) for v, n in found.items()), key=lambda p: (-len(p[1]), p[0])))


def redact(text: str, secrets: Iterable[tuple[str, str]]) -> str:
    """Return `text` with every secret value replaced by `[REDACTED:NAME]`."""
    for name, value in secrets:
        if value and value in text:
            text = text.replace(value, f"[REDACTED:{name}]")
    return text
