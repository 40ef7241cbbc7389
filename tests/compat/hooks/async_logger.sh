#!/usr/bin/env bash
# An async PostToolUse logger: appends one JSON line per tool call (async: true in settings).
set -euo pipefail
jq -c '{tool: .tool_name, session: .session_id, id: .tool_use_id}' >> "$CLAUDE_PROJECT_DIR/tool-log.jsonl"
