#!/usr/bin/env bash
# The official MCP conformance suite's client scenarios, with aimon as the client
# (tests/conformance/client.py). Prints one line a scenario and fails if one that applies fails.
#   NODE=/path/to/node (>= 22)  CONFORMANCE=/path/to/@modelcontextprotocol/conformance/dist/index.js
#   PYTHON=.venv/bin/python  JOBS=2 (scenarios at once)  OUT=folder for the logs
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
: "${NODE:?set NODE to a node >= 22}" "${CONFORMANCE:?set CONFORMANCE to .../conformance/dist/index.js}"
PYTHON=${PYTHON:-$HERE/../../.venv/bin/python}
JOBS=${JOBS:-2}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"

# Scenarios that do not apply to aimon, and why (each is still listed in the report).
declare -A LEFT_OUT=(
  ["auth/2025-03-26-oauth-metadata-backcompat"]="its authorization server's metadata names another issuer than the address it is found at; the mcp SDK refuses such metadata (RFC 8414 section 3.3, SEP-2468), a check aimon keeps"
  ["auth/cross-app-access-complete-flow"]="enterprise-managed authorization (an extension): it needs an identity assertion from the company's identity provider (single sign-on), which a terminal agent has no way to obtain"
)

scenarios=$("$NODE" "$CONFORMANCE" list 2>/dev/null | sed -n '/^Client scenarios/,$p' | sed -n 's/^  - \([^ ]*\).*/\1/p')
if [ -z "$scenarios" ]; then
  echo "conformance: the suite lists no client scenarios (is $CONFORMANCE the suite?)" >&2
  exit 1
fi

run_one() {  # one scenario: its log in $OUT, one line on stdout
  local s=$1 log res failed
  log="$OUT/$(echo "$s" | tr / _).txt"
  timeout 180 "$NODE" "$CONFORMANCE" client --command "$PYTHON $HERE/client.py" \
      --scenario "$s" --timeout 60000 > "$log" 2>&1
  local rc=$?
  res=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -o 'Passed: [0-9]*/[0-9]*, [0-9]* failed, [0-9]* warnings' | tail -1)
  failed=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '\] +(FAILURE|WARNING)' | sed -E 's/.*\[([^] ]*) *\] +[A-Z]+ (.*)/\1: \2/' | head -3 | tr '\n' ';' | cut -c1-200)
  if [ $rc -eq 0 ] && [[ "$res" == *" 0 failed, 0 warnings" ]]; then
    printf '%-46s PASS  %s\n' "$s" "$res"
  else
    printf '%-46s FAIL  %s  %s (log: %s)\n' "$s" "${res:-no result (rc $rc)}" "$failed" "$log"
  fi
}
export -f run_one
export NODE CONFORMANCE PYTHON HERE OUT

applicable=()
for s in $scenarios; do
  if [ -n "${LEFT_OUT[$s]:-}" ]; then
    printf '%-46s LEFT OUT  %s\n' "$s" "${LEFT_OUT[$s]}"
  else
    applicable+=("$s")
  fi
done
results=$(printf '%s\n' "${applicable[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_one "$1"' _ {})
echo "$results" | sort
passed=$(echo "$results" | grep -c ' PASS ')
echo "conformance client scenarios: $passed of ${#applicable[@]} that apply passed," \
     "${#LEFT_OUT[@]} left out (logs: $OUT)"
[ "$passed" -eq "${#applicable[@]}" ]
