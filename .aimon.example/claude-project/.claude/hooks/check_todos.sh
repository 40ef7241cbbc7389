#!/usr/bin/env bash
# Stop: if the last answer promises a TODO, ask the agent to finish it first (once).
input=$(cat)
python3 - "$input" <<'PY'
import json, sys
event = json.loads(sys.argv[1])
if event.get("stop_hook_active"):
    sys.exit(0)
last = ""
with open(event["transcript_path"]) as transcript:
    for line in transcript:
        entry = json.loads(line)
        if entry.get("type") == "assistant":
            last = "".join(b.get("text", "") for b in entry["message"]["content"]
                           if b.get("type") == "text")
if "TODO" in last:
    print("Your answer leaves a TODO: finish it before stopping.", file=sys.stderr)
    sys.exit(2)
PY
