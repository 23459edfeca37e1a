#!/usr/bin/env bash
# make docker-smoke: builds the image and checks it as a user would (docs/docker.md, Smoke test).
#
#  1. Builds postern:local with docker (when its daemon answers) or podman (`--format docker`, without which
#     podman drops the HEALTHCHECK).
#  2. In containers: `version`, `--help`, `check` (and that a mounted file decides, with no image ENV over
#     it), `demo` against the README walkthrough's statuses (curl from the host to a published port), the
#     HEALTHCHECK healthy, uid 10001, SIGTERM -> exit 0 within the shutdown grace.
#  3. docker-compose.yml validated by the compose tool, with and without the `redis` and `observability` profiles.
#  4. The compose stack with deploy/compose.standin.yml (Postern's Directus stand-in, unbootstrapped, in
#     Directus's place): the bootstrap creates everything and exits 0, Postern becomes healthy, the
#     walkthrough of docs/docker.md passes over the compose network, /readyz answers 200 12 times of 12
#     (the stand-in found by name through the network's DNS); then the `redis` profile: a token from
#     postern-a works on postern-b, and a logout on b is refused on a.
#  5. Removes every container, network and volume it created. It keeps the image postern:local (and, when
#     it had to build one, postern-smoke-redis:local), so that a later run or `docker compose up` reuses them.
#
# Compose: `docker compose` with docker. With podman: podman-compose (PyPI, pinned below, in .build/smoke-venv;
# Debian 12's 1.0.3 knows no profiles' merge tags) validates and merges the files (`config`), and
# scripts/compose-podman.py starts the merged stack with plain podman commands in depends_on order: podman 4.3
# (Debian 12) has no `podman wait --condition=healthy`, so podman-compose's `up` ignores service_healthy, and
# without systemd nothing runs a HEALTHCHECK unless asked (`podman healthcheck run`).
#
# Settings: SMOKE_REUSE_IMAGE=1 uses an existing postern:local instead of building (for iterating; CI builds);
# SMOKE_ENGINE=docker|podman forces the engine; SMOKE_KEEP=1 leaves the stack running on failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

IMAGE=postern:local
PODMAN_COMPOSE=podman-compose==1.6.0
REDIS_IMAGE=redis:7.2-alpine          # docker-compose.yml's
LOCAL_REDIS_IMAGE=postern-smoke-redis:local
GRACE_S=10                            # limits.shutdown_grace_s of the shipped config
run_id="smoke$$"
project="postern-$run_id"
started=$(date +%s)
work=$(mktemp -d /tmp/postern-docker-smoke.XXXXXX)
containers=()

passed=0
log() { echo "docker-smoke: [$(( $(date +%s) - started ))s] $*"; }
ok() {
    passed=$((passed + 1))
    log "ok: $*"
}
fail() {
    echo "docker-smoke: [$(( $(date +%s) - started ))s] FAIL: $*" >&2
    echo "docker-smoke: $passed passed, 1 failed"
    exit 1
}

# --- engine and compose ---------------------------------------------------------------------------
engine=${SMOKE_ENGINE:-}
if [ -z "$engine" ]; then
    if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
        engine=docker
    elif command -v podman >/dev/null 2>&1; then
        engine=podman
    else
        fail "neither a docker with a running daemon nor podman; install one (on Debian without a registry:
    podman, with the base images in its local store: docs/docker.md, Smoke test)"
    fi
fi
command -v curl >/dev/null || fail "curl is needed (apt-get install curl)"
if [ "$engine" = docker ]; then
    docker compose version >/dev/null 2>&1 || fail "docker has no compose plugin (docker compose)"
    compose_tool=(docker compose)
    build=(docker build)
else
    venv=.build/smoke-venv
    if [ ! -x "$venv/bin/podman-compose" ] || [ "$(cat "$venv/.postern-requirements" 2>/dev/null)" != "$PODMAN_COMPOSE" ]; then
        log "installing $PODMAN_COMPOSE into $venv"
        mkdir -p .build
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q --disable-pip-version-check "$PODMAN_COMPOSE"
        echo "$PODMAN_COMPOSE" > "$venv/.postern-requirements"
    fi
    compose_tool=("$venv/bin/podman-compose")
    build=(podman build --format docker)
fi
log "$engine $("$engine" version --format '{{.Client.Version}}' 2>/dev/null || echo '?'), compose: ${compose_tool[*]##*/}"

# compose_up [PROFILE] / compose_down: the stack of docker-compose.yml with deploy/compose.standin.yml over it.
# With podman: podman-compose merges and interpolates the files (`config`), and scripts/compose-podman.py
# starts them in depends_on order (podman-compose's own `up` cannot wait for a healthy service on podman 4.3).
compose_files=(-p "$project" -f docker-compose.yml -f deploy/compose.standin.yml)
compose_up() {
    local profile=(${1:+--profile "$1"})
    if [ "$engine" = docker ]; then
        docker compose "${compose_files[@]}" "${profile[@]}" up -d
    else
        "${compose_tool[@]}" "${compose_files[@]}" "${profile[@]}" config > "$work/merged${1:+-$1}.yml" \
            && "$venv/bin/python" scripts/compose-podman.py up "$project" "$work/merged${1:+-$1}.yml"
    fi
}
compose_down() {
    if [ "$engine" = docker ]; then
        docker compose "${compose_files[@]}" --profile redis down -v --remove-orphans
    else
        "$venv/bin/python" scripts/compose-podman.py down "$project"
    fi
}

cleanup() {
    status=$?
    if [ "$status" -ne 0 ] && [ "${SMOKE_KEEP:-0}" = 1 ]; then
        echo "docker-smoke: SMOKE_KEEP=1: left running: ${containers[*]:-} and compose project $project; $work"
        return
    fi
    if [ "$status" -ne 0 ]; then
        for c in "${containers[@]}"; do
            echo "--- logs of $c (last 20 lines)" >&2
            "$engine" logs --tail 20 "$c" >&2 2>&1 || true
        done
        if [ -f "$work/compose-started" ]; then
            "$engine" ps -a --filter "label=com.docker.compose.project=$project" >&2 2>&1 || true
            for c in $("$engine" ps -a -q --filter "label=com.docker.compose.project=$project" 2>/dev/null); do
                echo "--- logs of $("$engine" inspect --format '{{.Name}}' "$c") (last 15 lines)" >&2
                "$engine" logs --tail 15 "$c" >&2 2>&1 || true
            done
        fi
    fi
    for c in "${containers[@]}"; do "$engine" rm -f -v "$c" >/dev/null 2>&1 || true; done
    if [ -f "$work/compose-started" ]; then
        compose_down >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
    log "removed the containers, networks and volumes of this run (kept the image $IMAGE)"
}
trap cleanup EXIT

# --- helpers -----------------------------------------------------------------------------------------
# http METHOD URL [TOKEN] [JSON]: prints the status; the body is in $work/body.
http() {
    local args=(-s -o "$work/body" -w '%{http_code}' --max-time 15 -X "$1" "$2")
    [ -n "${3:-}" ] && args+=(-H "Authorization: Bearer $3")
    [ -n "${4:-}" ] && args+=(-H 'Content-Type: application/json' --data-binary "$4")
    curl "${args[@]}" || true
}
# expect STATUS WHAT METHOD URL [TOKEN] [JSON]
expect() {
    local want=$1 what=$2 got
    shift 2
    got=$(http "$@")
    [ "$got" = "$want" ] || fail "$what: $1 $2 answered $got, expected $want: $(head -c 300 "$work/body")"
}
# json EXPR: a value of the last body (python3 expression over d).
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($1)" "$work/body"; }
# poll SECONDS WHAT COMMAND...: runs COMMAND until it succeeds or SECONDS pass.
poll() {
    local seconds=$1 what=$2 deadline
    shift 2
    deadline=$(( $(date +%s) + seconds ))
    until "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -lt "$deadline" ] || fail "$what: not within ${seconds}s"
        sleep 0.5
    done
}
healthz() { [ "$(http GET "$1/healthz")" = 200 ]; }
# host_url CONTAINER PORT: http://127.0.0.1:N of a port published on an ephemeral host port.
host_url() {
    local mapped
    mapped=$("$engine" port "$1" "$2/tcp" | head -1)
    [ -n "$mapped" ] || fail "$1 publishes no port $2"
    echo "http://127.0.0.1:${mapped##*:}"
}
health_status() { "$engine" inspect --format '{{.State.Health.Status}}' "$1" 2>/dev/null; }
# healthy CONTAINER: the HEALTHCHECK says healthy (podman without systemd runs it only when asked).
healthy() {
    [ "$engine" = podman ] && podman healthcheck run "$1" >/dev/null 2>&1
    [ "$(health_status "$1")" = healthy ]
}

# --- 1. the image --------------------------------------------------------------------------------------
if [ "${SMOKE_REUSE_IMAGE:-0}" = 1 ] && "$engine" image inspect "$IMAGE" >/dev/null 2>&1; then
    log "reusing $IMAGE (SMOKE_REUSE_IMAGE=1)"
else
    log "building $IMAGE: ${build[*]} (the release build takes several minutes)"
    build_start=$(date +%s)
    "${build[@]}" -t "$IMAGE" . > "$work/build.log" 2>&1 || { tail -40 "$work/build.log" >&2; fail "the image did not build"; }
    log "built $IMAGE in $(( $(date +%s) - build_start ))s"
fi
size=$("$engine" image inspect --format '{{.Size}}' "$IMAGE")
log "$IMAGE: $(( size / 1000000 )) MB"
healthcheck=$("$engine" image inspect --format '{{json .Config.Healthcheck}}' "$IMAGE")
case "$healthcheck" in *healthcheck*) ;; *) fail "the image has no HEALTHCHECK ($healthcheck): podman needs --format docker" ;; esac

# --- 2. the CLI --------------------------------------------------------------------------------------
out=$("$engine" run --rm --no-healthcheck "$IMAGE" version) || fail "version exited non-zero"
[[ "$out" =~ ^postern\ [0-9] ]] || fail "version printed '$out'"
out=$("$engine" run --rm --no-healthcheck "$IMAGE" --help) || fail "--help exited non-zero"
[[ "$out" == *"usage: postern"* ]] || fail "--help printed no usage: $out"
out=$("$engine" run --rm --no-healthcheck "$IMAGE" check) || fail "check of the image's own config failed: $out"
[ "$out" = "config OK (/etc/postern/postern.json)" ] || fail "check: expected only 'config OK', got: $out"
# The issue-24 finding: an image ENV silently won over a mounted file. Now the mounted file decides...
printf '{"listen": "nope"}\n' > "$work/mounted.json"
chmod 0644 "$work/mounted.json"
mount=(-v "$work/mounted.json:/etc/postern/postern.json:ro")
if out=$("$engine" run --rm --no-healthcheck "${mount[@]}" "$IMAGE" check 2>&1); then fail "check passed a mounted file with listen \"nope\": $out"; fi
[[ "$out" == *'listen: must be host:port'* ]] || fail "check did not name the mounted file's listen: $out"
# ...and a variable given on top of it is named as the value that won.
out=$("$engine" run --rm --no-healthcheck "${mount[@]}" -e POSTERN_LISTEN=0.0.0.0:8080 "$IMAGE" check 2>&1) || fail "check with POSTERN_LISTEN: $out"
[[ "$out" == *"listen: from POSTERN_LISTEN (the file's value is not used)"* ]] || fail "check did not name POSTERN_LISTEN: $out"
ok "version, --help, check (a mounted file decides; values from the environment are named)"

# --- 3. demo: the README walkthrough -------------------------------------------------------------------
demo="$project-demo"
containers+=("$demo")
"$engine" run -d --name "$demo" -p 127.0.0.1::8080 "$IMAGE" demo >/dev/null 2>>"$work/run.log" \
    || { cat "$work/run.log" >&2; fail "cannot start the demo"; }
base=$(host_url "$demo" 8080)
poll 60 "demo answering /healthz on $base" healthz "$base"
login='{"email":"x@y.com","password":"123456"}'
expect 200 "login" POST "$base/api/v1/user/login" "" "$login"
token=$(json 'd["user"]["token"]')
expect 200 "who am I" GET "$base/api/v1/user/me" "$token"
expect 200 "list books" GET "$base/api/v1/books" "$token"
[ "$(json 'd["total"]')" -ge 5 ] || fail "the demo lists $(json 'd["total"]') books, expected the 5 seeded"
expect 200 "list posts, page 2" GET "$base/api/v1/posts?limit=2&page=2&sort=-date_created" "$token"
expect 200 "search" GET "$base/api/v1/books?search=swift" "$token"
expect 200 "read one" GET "$base/api/v1/books/1" "$token"
expect 201 "create" POST "$base/api/v1/books" "$token" '{"title":"Dune","subtitle":"Frank Herbert"}'
id=$(json 'd["books"][0]["id"]')
expect 200 "update" PATCH "$base/api/v1/books/$id" "$token" '{"subtitle":"Frank Herbert, 1965"}'
expect 204 "delete" DELETE "$base/api/v1/books/$id" "$token"
expect 403 "update someone else's" PATCH "$base/api/v1/books/4" "$token" '{"title":"mine now"}'
expect 404 "read a missing id" GET "$base/api/v1/books/999" "$token"
expect 200 "register" POST "$base/api/v1/user" "" '{"email":"new.reader@example.com","password":"a-long-password"}'
expect 200 "login for a refresh token" POST "$base/api/v1/user/login" "" "$login"
refresh=$(json 'd["data"]["refreshToken"]')
expect 200 "refresh" POST "$base/api/v1/user/refresh" "" "{\"refreshToken\":\"$refresh\"}"
expect 204 "logout" POST "$base/api/v1/user/logout" "$token"
expect 401 "list after logout" GET "$base/api/v1/books" "$token"
expect 200 "readyz" GET "$base/readyz"
ok "demo, the README walkthrough ($base)"

# --- 4. serve: HEALTHCHECK, uid, SIGTERM ---------------------------------------------------------------
serve="$project-serve"
containers+=("$serve")
"$engine" run -d --name "$serve" -p 127.0.0.1::8080 "$IMAGE" >/dev/null 2>>"$work/run.log" \
    || { cat "$work/run.log" >&2; fail "cannot start serve"; }
poll 60 "serve answering /healthz" healthz "$(host_url "$serve" 8080)"
poll 60 "the HEALTHCHECK of $serve reporting healthy (now: $(health_status "$serve"))" healthy "$serve"
uid=$("$engine" exec "$serve" sh -c 'awk "/^Uid:/ {print \$2}" /proc/1/status')
[ "$uid" = 10001 ] || fail "the gateway runs as uid '$uid', expected 10001"
term_start=$(date +%s%N)
"$engine" kill --signal TERM "$serve" >/dev/null
code=$(timeout $(( GRACE_S + 20 )) "$engine" wait "$serve") || fail "the gateway did not exit after SIGTERM"
elapsed_ms=$(( ($(date +%s%N) - term_start) / 1000000 ))
[ "$code" = 0 ] || fail "SIGTERM: exit code $code, expected 0"
[ "$elapsed_ms" -lt $(( GRACE_S * 1000 )) ] || fail "SIGTERM: exit after ${elapsed_ms} ms, beyond the ${GRACE_S} s grace"
ok "HEALTHCHECK healthy, uid 10001, SIGTERM -> exit 0 in ${elapsed_ms} ms"

# --- 5. the compose file -------------------------------------------------------------------------------
# The observability profile is validated only (its images are not started here; make check-observability
# checks its files).
for profile in "" redis observability; do
    args=(-f docker-compose.yml)
    [ -n "$profile" ] && args+=(--profile "$profile")
    "${compose_tool[@]}" "${args[@]}" config -q || fail "docker-compose.yml ${profile:+(profile $profile) }is not valid"
    services=$("${compose_tool[@]}" "${args[@]}" config --services | sort | tr '\n' ' ')
    want="bootstrap directus postern "
    [ "$profile" = redis ] && want="bootstrap directus postern postern-a postern-b redis "
    [ "$profile" = observability ] && want="bootstrap directus grafana postern prometheus "
    [ "$services" = "$want" ] || fail "docker-compose.yml ${profile:+(profile $profile) }has services '$services', expected '$want'"
done
ok "docker-compose.yml valid with and without the redis and observability profiles"

# --- 6. the compose stack with the Directus stand-in -----------------------------------------------------
export POSTERN_STANDIN_CONTAINER="$project-directus-standin"
if ! "$engine" image inspect "$REDIS_IMAGE" >/dev/null 2>&1 && [ "$engine" = podman ]; then
    # No registry here: Redis from Debian's redis-server, on the same base image.
    if ! podman image inspect "$LOCAL_REDIS_IMAGE" >/dev/null 2>&1; then
        log "no $REDIS_IMAGE here: building $LOCAL_REDIS_IMAGE from Debian's redis-server"
        # Like the official image's entrypoint: without a config file, `redis-server ARGS` runs with
        # protected mode off, since other containers (not loopback) are its clients.
        printf '%s\n' '#!/bin/sh' 'if [ "$1" = redis-server ]; then shift; exec redis-server "$@" --protected-mode no; fi' \
            'exec "$@"' > "$work/redis-entrypoint.sh"
        printf '%s\n' 'FROM debian:bookworm-slim' \
            'RUN apt-get update -q && apt-get install -y -q --no-install-recommends redis-server && rm -rf /var/lib/apt/lists/*' \
            'COPY redis-entrypoint.sh /usr/local/bin/redis-entrypoint.sh' \
            'RUN chmod 0755 /usr/local/bin/redis-entrypoint.sh && install -d -o redis -g redis /data' \
            'WORKDIR /data' 'USER redis' 'ENTRYPOINT ["redis-entrypoint.sh"]' 'CMD ["redis-server"]' > "$work/redis.Dockerfile"
        podman build --format docker --network host -t "$LOCAL_REDIS_IMAGE" -f "$work/redis.Dockerfile" "$work" \
            > "$work/redis-build.log" 2>&1 || { tail -20 "$work/redis-build.log" >&2; fail "cannot build $LOCAL_REDIS_IMAGE"; }
    fi
    export POSTERN_REDIS_IMAGE="$LOCAL_REDIS_IMAGE"
fi
touch "$work/compose-started"
compose_up > "$work/compose-up.log" 2>&1 || { tail -30 "$work/compose-up.log" >&2; fail "compose up failed"; }
# container_of SERVICE: its container (docker compose and podman-compose both set these labels).
container_of() {
    "$engine" ps -a -q --filter "label=com.docker.compose.project=$project" \
        --filter "label=com.docker.compose.service=$1" 2>/dev/null | head -1
}
standin_state() { "$engine" inspect --format '{{.Config.Labels}}' "$POSTERN_STANDIN_CONTAINER" 2>/dev/null; }
[[ "$(standin_state)" == *directus-stand-in* ]] || fail "no stand-in container $POSTERN_STANDIN_CONTAINER"
bootstrap_done() {
    local c
    c=$(container_of bootstrap)
    [ -n "$c" ] && [ "$("$engine" inspect --format '{{.State.Status}}' "$c")" = exited ]
}
poll 120 "the bootstrap exiting" bootstrap_done
bootstrap=$(container_of bootstrap)
code=$("$engine" inspect --format '{{.State.ExitCode}}' "$bootstrap")
"$engine" logs "$bootstrap" > "$work/bootstrap.log" 2>&1 || true
[ "$code" = 0 ] || { cat "$work/bootstrap.log" >&2; fail "the bootstrap exited $code"; }
grep -q 'created' "$work/bootstrap.log" || { cat "$work/bootstrap.log" >&2; fail "the bootstrap created nothing: the stand-in was not unbootstrapped"; }
ok "bootstrap created the collection, role, policy and permissions on the unbootstrapped stand-in and exited 0"
postern=$(container_of postern)
[ -n "$postern" ] || fail "compose started no postern container"
poll 90 "postern's HEALTHCHECK reporting healthy (now: $(health_status "$postern"))" healthy "$postern"
base=$(host_url "$postern" 8080)

# The walkthrough of docs/docker.md: the database starts empty, so register first.
user='{"email":"x@y.com","password":"123456"}'
expect 200 "register" POST "$base/api/v1/user" "" "$user"
expect 409 "register again" POST "$base/api/v1/user" "" "$user"
expect 200 "login" POST "$base/api/v1/user/login" "" "$user"
token=$(json 'd["user"]["token"]')
expect 200 "who am I" GET "$base/api/v1/user/me" "$token"
expect 200 "list (empty)" GET "$base/api/v1/books" "$token"
[ "$(json 'd["total"]')" = 0 ] || fail "a fresh stack lists $(json 'd["total"]') books, expected 0"
expect 201 "create 1" POST "$base/api/v1/books" "$token" '{"title":"Hello, world","subtitle":"The first post of the tutorial."}'
expect 201 "create 2" POST "$base/api/v1/books" "$token" '{"title":"Swift on the server","subtitle":"libevent inside"}'
expect 201 "create 3" POST "$base/api/v1/books" "$token" '{"title":"Dune","subtitle":"Frank Herbert"}'
id=$(json 'd["books"][0]["id"]')
expect 200 "list" GET "$base/api/v1/books" "$token"
[ "$(json 'd["total"]')" = 3 ] || fail "listed $(json 'd["total"]') books after creating 3"
expect 200 "list posts, page 2" GET "$base/api/v1/posts?limit=2&page=2&sort=-date_created" "$token"
expect 200 "search" GET "$base/api/v1/books?search=swift" "$token"
expect 200 "read one" GET "$base/api/v1/books/$id" "$token"
expect 200 "update" PATCH "$base/api/v1/books/$id" "$token" '{"subtitle":"Frank Herbert, 1965"}'
expect 200 "register a second user" POST "$base/api/v1/user" "" '{"email":"new.reader@example.com","password":"a-long-password"}'
token2=$(json 'd["user"]["token"]')
expect 403 "update someone else's" PATCH "$base/api/v1/books/$id" "$token2" '{"title":"mine now"}'
expect 404 "read a missing id" GET "$base/api/v1/books/999" "$token"
expect 204 "delete" DELETE "$base/api/v1/books/$id" "$token"
expect 200 "login for a refresh token" POST "$base/api/v1/user/login" "" "$user"
refresh=$(json 'd["data"]["refreshToken"]')
expect 200 "refresh" POST "$base/api/v1/user/refresh" "" "{\"refreshToken\":\"$refresh\"}"
expect 204 "logout" POST "$base/api/v1/user/logout" "$token"
expect 401 "list after logout" GET "$base/api/v1/books" "$token"
expect 200 "healthz" GET "$base/healthz"
# Every /readyz asks the stand-in's /server/ping, found by the name `directus` through the network's DNS.
ready=0
for _ in $(seq 12); do [ "$(http GET "$base/readyz")" = 200 ] && ready=$((ready + 1)); done
[ "$ready" = 12 ] || fail "/readyz answered 200 $ready times of 12 (the name directus on the $engine network): $(head -c 300 "$work/body")"
"$engine" exec "$postern" postern healthcheck || fail "postern healthcheck inside the container exited non-zero"
ok "compose stack healthy, the docs/docker.md walkthrough over the compose network, /readyz 12 of 12 ($base)"

# --- 7. the redis profile: two instances share sessions and revocation -----------------------------------
compose_up redis > "$work/compose-redis.log" 2>&1 || { tail -30 "$work/compose-redis.log" >&2; fail "compose --profile redis up failed"; }
a=$(container_of postern-a)
b=$(container_of postern-b)
[ -n "$a" ] && [ -n "$b" ] || fail "the redis profile started no postern-a/postern-b"
poll 90 "postern-a healthy" healthy "$a"
poll 90 "postern-b healthy" healthy "$b"
url_a=$(host_url "$a" 8080)
url_b=$(host_url "$b" 8080)
ready() { [ "$(http GET "$1/readyz")" = 200 ]; }
poll 30 "postern-a ready (Directus and Redis): $(head -c 200 "$work/body")" ready "$url_a"
poll 30 "postern-b ready (Directus and Redis)" ready "$url_b"
expect 200 "login on a" POST "$url_a/api/v1/user/login" "" "$user"
token=$(json 'd["user"]["token"]')
expect 200 "a's token on b" GET "$url_b/api/v1/books" "$token"
expect 200 "a's token on a" GET "$url_a/api/v1/books" "$token"
expect 204 "logout on b" POST "$url_b/api/v1/user/logout" "$token"
revoked_on_a() { [ "$(http GET "$url_a/api/v1/books" "$token")" = 401 ]; }
poll 3 "the logout on b refused on a" revoked_on_a
ok "redis profile, a token from postern-a works on postern-b, a logout on b is refused on a"

log "passed in $(( $(date +%s) - started ))s"
echo "docker-smoke: $passed passed, 0 failed"
