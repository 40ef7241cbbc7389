"""Where credentials live below a home folder: one table for every check that guards them.

The permission layer asks before any command or file tool reads one of these (even with no
rule configured); the OS sandbox makes them unreadable. A path is a file, or a folder and
everything in it; the value says what it holds, for messages.
"""

from __future__ import annotations

HOME_CREDENTIALS: dict[str, str] = {
    ".aws": "AWS's credentials",
    ".ssh": "ssh's keys",
    ".gnupg": "GnuPG's keys",
    ".netrc": "the .netrc logins",
    ".authinfo": "the .authinfo logins",
    ".authinfo.gpg": "the .authinfo logins",
    ".git-credentials": "git's stored credentials",
    ".config/git/credentials": "git's stored credentials",
    ".config/gh": "the GitHub CLI's token",
    ".config/hub": "the hub CLI's token",
    ".config/glab-cli": "the GitLab CLI's token",
    ".config/gcloud": "Google Cloud's credentials",
    ".azure": "Azure's credentials",
    ".oci": "Oracle Cloud's keys",
    ".config/doctl": "DigitalOcean's token",
    ".kube": "Kubernetes' credentials",
    ".docker/config.json": "Docker's registry logins",
    ".npmrc": "npm's registry tokens",
    ".yarnrc.yml": "yarn's registry tokens",
    ".pypirc": "PyPI's upload tokens",
    ".config/pip/pip.conf": "pip's index credentials",
    ".gem/credentials": "RubyGems' API key",
    ".cargo/credentials": "crates.io's token",
    ".cargo/credentials.toml": "crates.io's token",
    ".m2/settings.xml": "Maven's server passwords",
    ".m2/settings-security.xml": "Maven's master password",
    ".gradle/gradle.properties": "Gradle's credentials",
    ".terraform.d/credentials.tfrc.json": "Terraform's tokens",
    ".vault-token": "Vault's token",
    ".pgpass": "PostgreSQL's passwords",
    ".my.cnf": "MySQL's password",
    ".claude/.credentials.json": "Claude Code's login",
    ".claude.json": "Claude Code's account file",
    ".codex/auth.json": "Codex's login",
    ".gemini/oauth_creds.json": "Gemini CLI's login",
    ".config/anthropic": "Anthropic's CLI credentials",
    ".config/openai": "OpenAI's CLI credentials",
    ".local/share/aimon/credentials.json": "aimon's stored provider keys",
    "Library/Application Support/aimon/credentials.json": "aimon's stored provider keys",
    ".config/op": "1Password's CLI session",
    ".password-store": "pass's passwords",
    ".local/share/keyrings": "the desktop keyring",
    ".mozilla": "Firefox's cookies and saved logins",
    ".config/google-chrome": "Chrome's cookies and saved logins",
    ".config/chromium": "Chromium's cookies and saved logins",
    ".bash_history": "the shell history (commands typed with secrets)",
    ".zsh_history": "the shell history (commands typed with secrets)",
    ".psql_history": "psql's history",
    ".mysql_history": "mysql's history",
}
"""Home-relative paths of credentials, and what each holds."""
