#!/usr/bin/env bash
# A PostToolUse guard on Bash: read tool_response.stdout and block output holding a secret.
set -euo pipefail
stdout=$(jq -r '.tool_response.stdout // ""')
if grep -q 'SECRET-' <<<"$stdout"; then
    jq -n '{decision: "block", reason: "The command printed a secret; do not repeat it."}'
fi
exit 0
