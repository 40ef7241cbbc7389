#!/usr/bin/env bash
# A SessionStart hook that sets up the environment of later Bash commands.
set -euo pipefail
cat >/dev/null
echo 'export GREETING="hello from CLAUDE_ENV_FILE"' >> "$CLAUDE_ENV_FILE"
echo "Project conventions: run tests with make test."
