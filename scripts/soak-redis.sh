#!/usr/bin/env bash
# make soak-redis: two `postern serve` instances (release build) sharing one redis-server and one Directus
# stand-in (`postern standin`, Directus access tokens of SOAK_DIRECTUS_TTL_S), under SOAK_SECONDS (default 60)
# of mixed load from SOAK_CLIENTS (default 6) clients: logins, lists, refreshes and logouts, each logged-out token probed on the other instance more
# than 1 s after its logout (scripts/soak_redis.py). Prints the counts; fails on any 5xx, any transport
# error, any live token refused, and any revoked token accepted more than 1 s after its logout.
set -euo pipefail
cd "$(dirname "$0")/.."

swift build -c release --product postern >/dev/null
bin=.build/release/postern
work=$(mktemp -d /tmp/postern-soak-XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [ "${SOAK_KEEP:-}" = 1 ]; then echo "soak-redis: logs kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() {  # url, what
    for _ in $(seq 1 200); do
        if curl -fsS -o /dev/null "$1" 2>/dev/null; then return 0; fi
        sleep 0.05
    done
    echo "soak-redis: $2 did not come up ($1)" >&2
    return 1
}

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" --daemonize no \
    --logfile "$work/redis.log" &
pids+=($!)
for _ in $(seq 1 200); do
    if (exec 3<>/dev/tcp/127.0.0.1/"$redis_port") 2>/dev/null; then break; fi
    sleep 0.05
done

standin_port=$(free_port)
# Directus access tokens live SOAK_DIRECTUS_TTL_S (default 8) seconds: the gateway refreshes them 5 s before
# they expire, so every session's Directus refresh races between the two instances many times.
"$bin" standin "$standin_port" "${SOAK_DIRECTUS_TTL_S:-8}" >"$work/standin.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$standin_port/server/health" "the Directus stand-in"

ports=()
for name in a b; do
    port=$(free_port)
    admin=$(free_port)
    POSTERN_LISTEN="127.0.0.1:$port" POSTERN_ADMIN_LISTEN="127.0.0.1:$admin" POSTERN_WORKERS=2 \
    POSTERN_DIRECTUS_URL="http://127.0.0.1:$standin_port" POSTERN_SESSION_STORE="redis://127.0.0.1:$redis_port/0" \
    POSTERN_LOG_LEVEL=warning "$bin" serve --config config/postern.json >"$work/postern-$name.log" 2>&1 &
    pids+=($!)
    wait_http "http://127.0.0.1:$port/readyz" "postern $name"
    ports+=("$port")
done
echo "soak-redis: redis :$redis_port, stand-in :$standin_port, postern A :${ports[0]}, B :${ports[1]}," \
     "${SOAK_SECONDS:-60} s, ${SOAK_CLIENTS:-6} clients"
python3 scripts/soak_redis.py "${ports[0]}" "${ports[1]}" "${SOAK_SECONDS:-60}" "${SOAK_CLIENTS:-6}"
