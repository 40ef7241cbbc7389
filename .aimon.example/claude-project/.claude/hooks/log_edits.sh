#!/usr/bin/env bash
# PostToolUse on Edit|Write, async: log the edited file without slowing the turn.
python3 -c '
import json, os, sys
event = json.load(sys.stdin)
path = event.get("tool_response", {}).get("filePath", "?")
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], ".claude", "edits.log"), "a") as log:
    log.write(path + "\n")
'
