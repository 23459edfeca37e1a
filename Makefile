# Postern — developer and CI entry points (README, Development).

SWIFT    ?= swift
POSTERN  := .build/debug/postern
CONFIG   ?= config/postern.json
DEB_DEPS := libevent-dev libssl-dev libsqlite3-dev libhiredis-dev node-llhttp libjemalloc-dev pkg-config
# Needed by the checks and tests of `make test` only (not by the build, so not in the Dockerfile's build stage):
# the Redis tests start their own redis-server (TLS tests: certificates made with openssl, ACL changes with
# redis-cli); the resolver tests (ResolverLiveTests) bring up loopback in a
# network namespace of their own with ip; check-dashboard drives Debian's chromium through chromium-driver.
TEST_DEB_DEPS := python3-venv curl redis-server redis-tools openssl iproute2 chromium chromium-driver

.DEFAULT_GOAL := build
.PHONY: deps build release test unit check-docker check-kubernetes check-openapi check-observability check-dashboard docker-smoke run check bench bench-json bench-sessions soak-redis scale profile instructions fuzz clean

## deps: install the Debian packages the build needs (only those missing), and the Python tools of
## check-openapi, check-dashboard and check-kubernetes into .build/venv (scripts/pydeps.sh)
deps:
	@bash scripts/deps.sh $(DEB_DEPS) $(TEST_DEB_DEPS)
	@bash scripts/pydeps.sh

## build: debug build
build: deps
	$(SWIFT) build

## release: optimised build, the Swift runtime linked statically: the Dockerfile's flags, checked by
## scripts/check-runtime-libs.sh (also what make bench and make profile measure)
RELEASE_FLAGS := -c release --static-swift-stdlib
release: deps
	$(SWIFT) build $(RELEASE_FLAGS)

## test: everything CI runs (the Docker, Kubernetes, OpenAPI, observability and dashboard checks first, so that swift
## test's summary closes the output). swift test runs every test target; PosternEndToEndTests runs .build/debug/postern and
## fails (never skips) without it, so the executable is built first.
test: deps check-docker check-kubernetes check-openapi check-observability check-dashboard
	$(SWIFT) build --product postern
	$(SWIFT) test

## unit: the in-process tests only, for the edit-build-test loop (under a minute; about 20 s of CPU): swift test
## without the end-to-end tests (they run the built binary and other processes) and the suites that start
## redis-server or a TLS peer in Python (UNIT_SKIP, a --skip pattern); `make test` runs them all
UNIT_SKIP := PosternEndToEndTests|RedisClientTests|RedisTLSTests|RedisConnectionAddressTests|RedisTLSGatewayTests|RedisEventBusTests|RedisSessionStoreTests|RedisTwoInstanceTests|AdminSessionsRedisTests|TLSUpstreamTests|TLSKeepAliveTests
unit: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --skip '$(UNIT_SKIP)'

## check-kubernetes: the kustomize base deploy/kubernetes/ offline (scripts/check_kubernetes.py, docs/kubernetes.md):
## every object against the Kubernetes 1.30 and 1.37 schemas (kubernetes-validate, strict), and tied to the project:
## the ConfigMap is config/postern.json with Redis sessions and `postern check` accepts it with the manifests'
## environment, every POSTERN_* name is one Sources/PosternCore/Config reads, the probes' ports are listen and
## admin_listen and their paths answer 200 there (`postern demo` with the ConfigMap), the image is docker-smoke's
check-kubernetes: deps
	$(SWIFT) build --product postern
	.build/venv/bin/python scripts/check_kubernetes.py

## check-openapi: `postern openapi` and the served document validate (openapi-spec-validator), and a bounded
## Schemathesis run against `postern demo` on free ports finds no 5xx and no answer outside its schema
check-openapi: deps
	$(SWIFT) build --product postern
	bash scripts/check-openapi.sh

## check-observability: the compose profile `observability` (docs/docker.md): `promtool check config` on
## deploy/prometheus/prometheus.yml, the Grafana files parse, `promtool check rules` on the dashboard's queries,
## `promtool check metrics` on the /metrics of `postern demo` after traffic (scripts/check-observability.sh; promtool
## from Debian's prometheus package, unpacked into .build/promtool, not installed). The dashboard's metric names:
## ObservabilityDashboardTests in swift test
check-observability: deps
	$(SWIFT) build --product postern
	bash scripts/check-observability.sh

## check-dashboard: the operator console in headless Chromium (scripts/dashboard_browser_test.py): `postern demo` on free
## ports with an admin token; opens the page, gives the token, sees the request count rise after traffic, finds a user
## signed in twice, revokes one session with its button, then that token gets 401 and the other 200; no page error
## (a CSP block would be one); screenshot in .build/dashboard.png
check-dashboard: deps
	$(SWIFT) build --product postern
	.build/venv/bin/python scripts/dashboard_browser_test.py

## check-docker: the Dockerfile's runtime packages cover `ldd` of the release binary built with the
## Dockerfile's flags (scripts/check-runtime-libs.sh); docker-compose.yml is valid (when a Compose v2
## client is installed: `docker compose config` needs no daemon)
check-docker: deps
	bash scripts/check-runtime-libs.sh
	@if command -v docker >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; then \
		docker compose -f docker-compose.yml config -q && echo "check-docker: docker-compose.yml OK (docker compose config)"; \
	elif command -v docker-compose >/dev/null 2>&1 && docker-compose version 2>/dev/null | grep -q ' v2\.'; then \
		docker-compose -f docker-compose.yml config -q && echo "check-docker: docker-compose.yml OK (docker-compose config)"; \
	else \
		echo "check-docker: no Docker Compose v2 client here; docker-compose.yml not validated"; \
	fi

## docker-smoke: builds the image (docker, or podman with --format docker) and checks it in containers: the CLI,
## the README walkthrough on `demo`, HEALTHCHECK, uid 10001, SIGTERM; docker-compose.yml with and without the
## redis profile, started with the Directus stand-in (deploy/compose.standin.yml); removes what it started
## (scripts/docker-smoke.sh, docs/docker.md). SMOKE_REUSE_IMAGE=1 skips the build when postern:local exists
docker-smoke:
	bash scripts/docker-smoke.sh

## run: the gateway on :8080 in front of the built-in Directus stand-in on :8055; the operator console on
## 127.0.0.1:9180 with the admin token DEMO_ADMIN_TOKEN (or POSTERN_ADMIN_TOKEN when set): a demo's token, not a secret
DEMO_ADMIN_TOKEN ?= postern-demo-admin-token
run: deps build
	POSTERN_ADMIN_TOKEN="$${POSTERN_ADMIN_TOKEN:-$(DEMO_ADMIN_TOKEN)}" $(POSTERN) demo

## check: validate the shipped config
check: build
	$(POSTERN) check --config $(CONFIG)

## bench: gateway (A), gateway with the micro-cache (C) vs a one-worker nginx proxy (B), all in front of a
## canned nginx Directus with 20 posts; requests/s, p50, p99, CPU/request, peak RSS, ratios (scripts/bench.sh)
bench: deps
	bash scripts/bench.sh

## profile: the bench's A setup under perf record (callgrind if perf cannot run): top symbols, CPU µs,
## syscalls and mallocs per request (scripts/profile.sh; data kept in .bench/)
profile: deps
	bash scripts/profile.sh

## instructions: userspace instructions per request on the bench's A and C setups (callgrind, start-up and
## warm-up not counted): a load-independent figure for comparing two builds (scripts/instructions.sh)
instructions: deps
	bash scripts/instructions.sh

## bench-sessions: 100 000 live sessions in the memory and the SQLite store: authenticate (cache hit, cold) and
## logout µs/op (median, p99) and peak RSS against the targets (< 50 µs each, < 150 MB); fails if one is missed
bench-sessions: deps
	$(SWIFT) build -c release --product postern-bench-sessions
	@status=0; for store in memory sqlite; do .build/release/postern-bench-sessions $$store || status=1; done; exit $$status

## bench-json: µs of CPU to translate bench/posts-20.json (books): the transcoder and Foundation Codable in
## one run; fails above BENCH_JSON_MAX_US (default 10) for the transcoder
bench-json: deps
	$(SWIFT) build -c release --product postern-bench-json
	.build/release/postern-bench-json --max-us $(or $(BENCH_JSON_MAX_US),10) bench/posts-20.json $(CONFIG) books

## scale: the release gateway (default config, 2 workers) under SCALE_CLIENTS (10000) concurrent keep-alive clients
## (wrk, SCALE_DURATION 30s: errors, non-2xx, peak RSS) and as many idle connections (their RSS cost); fails when a
## target of docs/api.md (Limits and defaults) is missed (scripts/scale.sh; needs ulimit -n above 11000)
scale: deps
	bash scripts/scale.sh

## soak-redis: two `postern serve` (release) on one redis-server and the Directus stand-in, SOAK_SECONDS
## (default 60) of logins, lists, refreshes and logouts from SOAK_CLIENTS (default 6) clients; prints the
## counts, fails on any 5xx or any revoked token accepted more than 1 s after its logout (scripts/soak-redis.sh)
soak-redis: deps
	bash scripts/soak-redis.sh

## fuzz: libFuzzer targets (Fuzz/Targets/) with ASan, FUZZ_SECONDS each (default 30)
fuzz: deps
	bash scripts/fuzz.sh

clean:
	$(SWIFT) package clean
	rm -rf .build/fuzz
	rm -rf .bench
