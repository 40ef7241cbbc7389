#!/usr/bin/env bash
# SessionStart: exports for every later Bash command, and a line of context for the model.
cat >/dev/null
if [[ -n "${CLAUDE_ENV_FILE:-}" ]]; then
    echo 'export NODE_ENV=development' >> "$CLAUDE_ENV_FILE"
fi
echo "Branch: $(git branch --show-current 2>/dev/null || echo none)"
