#!/usr/bin/env bash
# A PostToolUseFailure hook that adds a hint for the model.
set -euo pipefail
tool=$(jq -r '.tool_name')
jq -n --arg tool "$tool" '{hookSpecificOutput: {hookEventName: "PostToolUseFailure",
    additionalContext: ("The " + $tool + " call failed; read the error before retrying.")}}'
