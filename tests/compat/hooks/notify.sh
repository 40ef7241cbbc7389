#!/usr/bin/env bash
# A Notification hook: where a real one calls notify-send or osascript, this one writes a file.
set -euo pipefail
jq -c '{type: .notification_type, message: .message}' >> "$CLAUDE_PROJECT_DIR/notifications.jsonl"
