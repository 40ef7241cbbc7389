#!/usr/bin/env bash
# Print the commits since a revision (default: the latest tag, else the first commit).
set -euo pipefail
since="${1:-$(git describe --tags --abbrev=0 2>/dev/null || git rev-list --max-parents=0 HEAD)}"
git log --no-merges --format='%h %s (%an)' "${since}..HEAD"
