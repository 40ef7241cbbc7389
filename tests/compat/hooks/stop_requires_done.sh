#!/usr/bin/env bash
# A Stop hook in the style of Claude Code's community collections: read the transcript with
# jq, find the last assistant text, and keep the agent going until it says DONE.
set -euo pipefail
input=$(cat)
active=$(jq -r '.stop_hook_active' <<<"$input")
transcript=$(jq -r '.transcript_path' <<<"$input")
last=$(jq -rs '[.[] | select(.type == "assistant")] | last | .message.content
               | map(select(.type == "text") | .text) | join("")' "$transcript")
if [[ "$active" != "true" && "$last" != *DONE* ]]; then
    echo "Not finished: end your answer with DONE once the task is complete." >&2
    exit 2
fi
exit 0
