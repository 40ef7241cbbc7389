#!/usr/bin/env bash
# Notification: a desktop notice when the agent waits for approval or for you.
message=$(python3 -c 'import json,sys; print(json.load(sys.stdin).get("message",""))')
if command -v notify-send >/dev/null 2>&1; then
    notify-send "aimon" "$message" || true
fi
exit 0
