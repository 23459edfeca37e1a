#!/usr/bin/env bash
# Checks the OpenAPI document (docs/api.md, OpenAPI), in three steps:
#   1. `postern openapi` (the shipped config) validates with openapi-spec-validator;
#   2. `postern demo` starts on free ports; the document it serves at /api/v1/openapi.json validates too;
#   3. a bounded Schemathesis run against that demo, signed in as x@y.com, finds no 5xx and no answer
#      that breaks its own schema.
# Needs the tools installed by scripts/pydeps.sh (make deps) and a debug build (swift build).
# SCHEMATHESIS_MAX_EXAMPLES (default 50) bounds the run.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.build/venv
postern=.build/debug/postern
[ -x "$venv/bin/schemathesis" ] || { echo "check-openapi: run 'make deps' first ($venv missing)" >&2; exit 1; }
[ -x "$postern" ] || swift build --product postern

work=$(mktemp -d)
demo_pid=""
cleanup() {
    if [ -n "$demo_pid" ]; then kill "$demo_pid" 2>/dev/null || true; wait "$demo_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

echo "check-openapi: postern openapi | openapi-spec-validator"
"$postern" openapi > "$work/openapi.json"
"$venv/bin/openapi-spec-validator" "$work/openapi.json"

# The demo on free ports: the gateway and the admin listener from the environment, the stand-in by flag.
POSTERN_LISTEN=127.0.0.1:0 POSTERN_ADMIN_LISTEN=127.0.0.1:0 POSTERN_LOG_LEVEL=warning \
    "$postern" demo --standin-port 0 > "$work/demo.out" 2> "$work/demo.err" &
demo_pid=$!
base=""
for _ in $(seq 1 100); do
    base=$(sed -n 's/^postern demo: gateway on \(http:\/\/[0-9.]*:[0-9]*\),.*/\1/p' "$work/demo.out" 2>/dev/null || true)
    [ -n "$base" ] && break
    kill -0 "$demo_pid" 2>/dev/null || { cat "$work/demo.err" >&2; echo "check-openapi: demo did not start" >&2; exit 1; }
    sleep 0.1
done
[ -n "$base" ] || { echo "check-openapi: demo printed no address" >&2; exit 1; }
echo "check-openapi: demo at $base"

curl -sf "$base/api/v1/openapi.json" -o "$work/served.json"
"$venv/bin/openapi-spec-validator" "$work/served.json"
python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' \
    "$work/openapi.json" "$work/served.json" || {
    echo "check-openapi: the served document differs from 'postern openapi'" >&2; exit 1; }

token=$(curl -sf -X POST "$base/api/v1/user/login" -H 'Content-Type: application/json' \
    -d '{"email":"x@y.com","password":"123456"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["user"]["token"])')

# Logout is left out: it would end the session every other operation runs with.
# One worker: with two, Schemathesis compiles code on two threads at once, which CPython 3.11 before 3.11.8
# can crash on ("SystemError: AST constructor recursion depth mismatch", CPython gh-106905): an error of the
# tool, not of the gateway, that failed a CI run.
echo "check-openapi: schemathesis (max ${SCHEMATHESIS_MAX_EXAMPLES:-50} examples per operation)"
"$venv/bin/schemathesis" --config-file scripts/schemathesis.toml run "$work/served.json" --url "$base" \
    -H "Authorization: Bearer $token" \
    --checks not_a_server_error,response_schema_conformance \
    --exclude-operation-id logout \
    --max-examples "${SCHEMATHESIS_MAX_EXAMPLES:-50}" \
    --phases examples,coverage,fuzzing \
    --seed 1 --workers 1 --no-color \
    --generation-database none \
    --report-dir "${SCHEMATHESIS_REPORT_DIR:-$work/report}" ${SCHEMATHESIS_REPORT:+--report "$SCHEMATHESIS_REPORT"}
