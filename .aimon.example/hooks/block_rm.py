"""PreToolUse hook: refuse `rm` in any form; everything else goes on to the permission check.

Claude Code's protocol: the event arrives as JSON on stdin; exit 2 blocks the call and stderr
is fed back to the model.
"""

import json
import shlex
import sys

event = json.load(sys.stdin)
command = event.get("tool_input", {}).get("command", "")
try:
    words = shlex.split(command)
except ValueError:
    words = command.split()
if any(word == "rm" or word.endswith("/rm") for word in words):
    print("Deleting files with rm is blocked in this project; move them to ./trash instead.",
          file=sys.stderr)
    sys.exit(2)
sys.exit(0)
