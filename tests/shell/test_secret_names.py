"""Which variables are credentials: a generated table of names and value shapes, both sides.

Every credential form is written in every spelling a person or a tool uses for it (upper and
lower snake case, camelCase, PascalCase); each must be held back from a model's command and
its value redacted. The controls (PATH, TOKENIZERS_PARALLELISM, KEYBOARD_LAYOUT, ...) must
reach commands untouched: a rule that holds back everything is no rule.
"""

from __future__ import annotations

import pytest

from aimon_core.shell import model_env, redact, secret_values

VALUE = "v4lue-0f-the-variable-71"


def spellings(words: tuple[str, ...]) -> list[str]:
    """Return `words` as a variable name in each common spelling."""
    return sorted({
        "_".join(words).upper(),
        "_".join(words).lower(),
        words[0].lower() + "".join(w.capitalize() for w in words[1:]),
        "".join(w.capitalize() for w in words),
    })


# Credential forms as words after a service's name: `*_KEY`, `*_API_KEY`, `*_TOKEN`, ...
FORMS = (
    ("KEY",), ("KEYS",), ("API", "KEY"), ("APIKEY",), ("ACCESS", "KEY"), ("SECRET", "KEY"),
    ("PRIVATE", "KEY"), ("SIGNING", "KEY"), ("ENCRYPTION", "KEY"), ("TOKEN",),
    ("ACCESS", "TOKEN"), ("AUTH", "TOKEN"), ("REFRESH", "TOKEN"), ("SECRET",),
    ("CLIENT", "SECRET"), ("PASSWORD",), ("ROOT", "PASSWORD"), ("PASSWD",), ("PASSPHRASE",),
    ("CREDENTIALS",), ("CREDENTIAL", "FILE"), ("PAT",), ("PWD",), ("AUTH",),
    ("AUTH", "HEADER"), ("AUTHORIZATION",), ("JWT",), ("DSN",), ("WEBHOOK", "URL"),
    ("CONNECTION", "STRING"), ("COOKIE",),
)
SERVICES = (("MY", "SERVICE"), ("DB",), ("DEPLOY",))
# Names real tools and clouds use, as they spell them.
KNOWN = (
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_API_KEY", "AZURE_CLIENT_SECRET", "AZURE_STORAGE_CONNECTION_STRING", "ARM_CLIENT_SECRET",
    "GH_TOKEN", "GITHUB_TOKEN", "GITHUB_PAT", "GITLAB_PRIVATE_TOKEN", "CI_JOB_JWT", "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN", "NPM_TOKEN", "NPM_CONFIG__AUTH", "npm_config__auth",
    "npm_config__authToken", "NODE_AUTH_TOKEN", "SLACK_BOT_TOKEN", "SLACK_WEBHOOK_URL",
    "SLACK_SIGNING_SECRET", "STRIPE_SECRET_KEY", "STRIPE_SK", "TWILIO_AUTH_TOKEN",
    "SENTRY_DSN", "SENTRY_AUTH_TOKEN", "DOCKER_PASSWORD", "DOCKER_AUTH_CONFIG", "PGPASSWORD",
    "MYSQL_PWD", "MYSQL_ROOT_PASSWORD", "REDIS_PASSWORD", "VAULT_TOKEN", "CODECOV_TOKEN",
    "CLOUDFLARE_API_TOKEN", "DIGITALOCEAN_ACCESS_TOKEN", "HEROKU_API_KEY", "VERCEL_TOKEN",
    "DISCORD_WEBHOOK_URL", "DJANGO_SECRET_KEY", "SECRET_KEY_BASE", "SSH_PRIVATE_KEY",
    "GPG_PASSPHRASE", "TF_VAR_db_password", "dbPassword", "openaiApiKey", "GithubToken",
    "X-Api-Key", "Authorization", "KEY", "TOKEN", "SECRET",
)
CREDENTIAL_NAMES = sorted({
    *(name for service in SERVICES for form in FORMS for name in spellings(service + form)),
    *KNOWN,
})

# Names that are no credentials, where the line is drawn: TOKEN must end a word (not
# TOKENS, TOKENIZERS), KEY must be a word of its own (not KEYBOARD, KEYMAP), AUTH is a
# credential only last or before a payload (not SSH_AUTH_SOCK, OS_AUTH_URL, AUTHOR), PWD
# only after another word (not PWD, OLDPWD), PAT only as a word (not PATH).
ORDINARY_NAMES = (
    "PATH", "HOME", "PWD", "OLDPWD", "USER", "SHELL", "TERM", "LANG", "LC_ALL", "TZ",
    "TMPDIR", "EDITOR", "PAGER", "DISPLAY", "XDG_RUNTIME_DIR", "VIRTUAL_ENV", "PYTHONPATH",
    "TOKENIZERS_PARALLELISM", "MAX_TOKENS", "MAX_MCP_OUTPUT_TOKENS", "KEYBOARD_LAYOUT",
    "KEYBOARD_MODEL", "XKB_DEFAULT_LAYOUT", "KEYMAP", "KEY_ID", "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL", "AUTHOR", "SSH_AUTH_SOCK", "OS_AUTH_URL", "AUTH_TYPE",
    "AWS_REGION", "AWS_PROFILE", "AWS_DEFAULT_REGION", "AZURE_CLIENT_ID", "AZURE_TENANT_ID",
    "GOOGLE_CLOUD_PROJECT", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "AIMON_HOME",
    "COLORTERM", "HISTFILE", "PATCH_LEVEL", "PATTERN", "keyboardLayout", "maxTokens",
)

# Values that are credentials under any name, each with the part that must not show.
PASSWORD = "pw-9f8e7d6c5b4a"
TOKENS = (  # tokens of well-known services, as they are issued
    ("SOME_SETTING", "ghp_" + "A1b2C3d4E5" * 4),
    ("GIT_CREDS_HELPER", "github_pat_" + "11ABCDEFG0" * 4),
    ("CI_VALUE", "glpat-" + "x1y2z3w4v5" * 3),
    ("ASSISTANT", "sk-ant-api03-" + "Zz09" * 10),
    ("LLM", "sk-proj-" + "Qq12" * 10),
    ("BOT", "xoxb-" + "1234567890-" * 3 + "abc"),
    ("CLOUD_ID", "AKIA" + "ABCDEFGHIJ234567"),
    ("HUB", "hf_" + "aBcDeFgHiJ" * 4),
    ("REGISTRY", "npm_" + "aBcDeFgHiJ" * 4),
    ("PAYMENTS", "sk_live_" + "aBcDeFgHiJ" * 3),
    ("MAPS", "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    ("SESSION_VALUE", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXNpZw"),
)
SHAPED_VALUES = (
    ("DATABASE_URL", f"postgres://app:{PASSWORD}@db.internal:5432/app", PASSWORD),
    ("MONGODB_URI", f"mongodb+srv://root:{PASSWORD}@cluster0.example.net/x", PASSWORD),
    ("REDIS_URL", f"redis://:{PASSWORD}@cache:6379/0", PASSWORD),
    ("HTTPS_PROXY", f"http://me:{PASSWORD}@proxy.corp:3128", PASSWORD),
    ("EXTRA_INDEX", f"https://__token__:{PASSWORD}@pypi.corp/simple", PASSWORD),
    ("DEPLOY_MATERIAL", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n"
                        "-----END OPENSSH PRIVATE KEY-----\n", "b3BlbnNzaC1rZXktdjEAAAA"),
    ("GPG_MATERIAL", "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBGZ0AAAAAAAA\n",
     "lQOYBGZ0AAAAAAAA"),
    *((name, token, token) for name, token in TOKENS),
    ("HEADERS", "Authorization: Bearer " + TOKENS[0][1], TOKENS[0][1]),
)
# Values of the same kinds that hold no credential.
ORDINARY_VALUES = (
    ("DATABASE_URL", "postgres://db.internal:5432/app"),
    ("DATABASE_URL_USER", "postgres://app@db.internal/app"),
    ("HTTP_PROXY", "http://proxy.corp:3128"),
    ("HOMEPAGE", "https://example.com/a:b@c"),
    ("NOTE", "task-skeleton-builder-for-the-frontend"),
    ("PUBLIC_MATERIAL", "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n"),
    ("GREETING", "hello world"),
)


@pytest.mark.parametrize("name", CREDENTIAL_NAMES)
def test_a_credential_name_is_held_back_and_redacted(name: str) -> None:
    assert name not in model_env({name: VALUE, "PATH": "/bin"})
    assert redact(f"echo {VALUE}", secret_values({name: VALUE})) == f"echo [REDACTED:{name}]"


@pytest.mark.parametrize("name", ORDINARY_NAMES)
def test_an_ordinary_name_reaches_commands(name: str) -> None:
    assert model_env({name: VALUE}) == {name: VALUE}
    assert secret_values({name: VALUE}) == ()


@pytest.mark.parametrize(("name", "value", "part"), SHAPED_VALUES,
                         ids=[row[0] for row in SHAPED_VALUES])
def test_a_credential_value_is_held_back_and_redacted_whatever_its_name(
        name: str, value: str, part: str) -> None:
    assert name not in model_env({name: value})
    secrets = secret_values({name: value})
    assert part not in redact(f"printed: {value}\nalone: {part}", secrets)


@pytest.mark.parametrize(("name", "value"), ORDINARY_VALUES, ids=[r[0] for r in ORDINARY_VALUES])
def test_an_ordinary_value_reaches_commands(name: str, value: str) -> None:
    assert model_env({name: value}) == {name: value}
    assert secret_values({name: value}) == ()


def test_a_passthrough_keeps_any_credential_but_a_provider_key() -> None:
    environ = {"GITHUB_TOKEN": VALUE, "DATABASE_URL": f"postgres://a:{PASSWORD}@h/d",
               "anthropic_api_key": VALUE, "OPENAI_API_KEY": VALUE}
    kept = model_env(environ, passthrough=tuple(environ))
    assert kept == {"GITHUB_TOKEN": VALUE, "DATABASE_URL": f"postgres://a:{PASSWORD}@h/d"}


def test_settings_env_follows_the_same_rule() -> None:
    settings = {"GITHUB_TOKEN": VALUE, "ANTHROPIC_API_KEY": "sk-ant-" + "k" * 30,
                "PYTHONDONTWRITEBYTECODE": "1"}
    env = model_env({"PATH": "/bin"}, ("GITHUB_TOKEN", "ANTHROPIC_API_KEY"),
                    settings_env=settings)
    assert env == {"PATH": "/bin", "GITHUB_TOKEN": VALUE, "PYTHONDONTWRITEBYTECODE": "1"}
    assert model_env({}, settings_env=settings) == {"PYTHONDONTWRITEBYTECODE": "1"}
