#!/usr/bin/env bash
# PreToolUse on Bash: refuse force pushes (exit 2: the reason on stderr goes to the model).
command=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["tool_input"].get("command",""))')
if [[ "$command" == *"push"*"--force"* || "$command" == *"push -f"* ]]; then
    echo "Force pushes are not allowed in this repository." >&2
    exit 2
fi
exit 0
