"""PostToolUse hook: after an edit, remind the model to run the tests (as additional context)."""

import json
import sys

event = json.load(sys.stdin)
path = event.get("tool_input", {}).get("file_path", "")
if path.endswith(".py"):
    print(json.dumps({
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "additionalContext": f"{path} changed: run `python -m pytest -q` before you finish.",
        }
    }))
