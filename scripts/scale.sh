#!/usr/bin/env bash
# make scale: the gateway (release build, default config, 2 workers) in front of the bench's canned Directus
# upstream, under the scale targets of docs/api.md (Limits and defaults):
#   1. SCALE_CLIENTS (10000) concurrent keep-alive clients: wrk -t2 -c$SCALE_CLIENTS -d$SCALE_DURATION on
#      GET /api/v1/books. Prints requests, socket errors, non-2xx answers and the gateway's peak RSS.
#   2. SCALE_CLIENTS idle keep-alive connections after one GET each, then (on a fresh gateway) as many that never
#      send a byte: the growth of the gateway's resident set with them (scripts/idle_clients.py holds them).
# wrk's default 2 s timeout counts as an error: a request that waits its turn longer is one.
# Fails when a target is missed: any error or non-2xx, peak RSS >= 150 MB, or idle connections costing >= 64 MB.
# Needs `ulimit -n` above SCALE_CLIENTS + 1000 (the script raises its soft limit to the hard one).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TOOL=scale
# shellcheck source=../bench/lib.sh
source bench/lib.sh

CLIENTS="${SCALE_CLIENTS:-10000}"
DURATION="${SCALE_DURATION:-30s}"
ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -gt $(( CLIENTS + 1000 )) ] || die "ulimit -n $(ulimit -n) is too low for $CLIENTS clients"
prepare_tools
start_upstream
failed=0

say "1. $CLIENTS concurrent keep-alive clients, $DURATION (wrk -t2 -c$CLIENTS)"
start_gateway 2 gateway-busy
wrk -t2 -c"$CLIENTS" -d"$DURATION" -H "Authorization: Bearer $POSTERN_TOKEN" \
    "http://$HOST:$GATEWAY_PORT$BOOKS_PATH" > "$WORK/wrk.txt" 2>&1 || { cat "$WORK/wrk.txt" >&2; die "wrk failed"; }
requests="$(wrk_field "$WORK/wrk.txt" requests)"; errors="$(wrk_field "$WORK/wrk.txt" sockerr)"
non2xx="$(wrk_field "$WORK/wrk.txt" non2xx)"; peak="$(peak_rss_mb "$GATEWAY_PID")"
printf 'concurrent: %s requests, %s socket errors, %s non-2xx, peak RSS %s MB (target: 0, 0, < 150 MB)\n' \
    "$requests" "$errors" "$non2xx" "$peak"
grep -E 'Socket errors|Non-2xx' "$WORK/wrk.txt" || true
if [ "$errors" != 0 ] || [ "$non2xx" != 0 ] || awk -v p="$peak" 'BEGIN { exit !(p >= 150) }'; then failed=1; fi
stop_gateway

say "2. $CLIENTS idle keep-alive connections after one GET each; then, on a fresh gateway, $CLIENTS that never send a byte"
for mode in get silent; do
    start_gateway 2 "gateway-idle-$mode"
    python3 scripts/idle_clients.py "$HOST" "$GATEWAY_PORT" "$CLIENTS" "$POSTERN_TOKEN" "$GATEWAY_PID" "$mode" | tee -a "$WORK/idle.txt"
    stop_gateway
done
idle_cost="$(awk '/^idle-after-get:/ { print $2 }' "$WORK/idle.txt")"
if [ -z "$idle_cost" ] || awk -v c="$idle_cost" 'BEGIN { exit !(c >= 64) }'; then failed=1; fi

[ "$failed" = 0 ] || die "a scale target was missed (above)"
say "all scale targets met"
