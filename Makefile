# Postern — developer and CI entry points (DESIGN §5).

SWIFT    ?= swift
POSTERN  := .build/debug/postern
CONFIG   ?= config/postern.json
DEB_DEPS := libevent-dev libssl-dev libsqlite3-dev libhiredis-dev pkg-config
# Needed by the tests only (not by the Docker build stage): the Redis tests start their own redis-server.
TEST_DEPS := redis-server

.DEFAULT_GOAL := build
.PHONY: deps build release test check-docker run check bench profile fuzz clean

## deps: install the Debian packages the build and the tests need (only those missing)
deps:
	@bash scripts/deps.sh $(DEB_DEPS) $(TEST_DEPS)

## build: debug build
build: deps
	$(SWIFT) build

## release: optimised build
release: deps
	$(SWIFT) build -c release

## test: everything CI runs (the Docker checks first, so that swift test's summary closes the output)
test: deps check-docker
	$(SWIFT) test

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

## run: the gateway on :8080 in front of the built-in Directus stand-in on :8055
run: deps build
	$(POSTERN) demo

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

## fuzz: libFuzzer targets (Fuzz/Targets/) with ASan, FUZZ_SECONDS each (default 30)
fuzz: deps
	bash scripts/fuzz.sh

clean:
	$(SWIFT) package clean
	rm -rf .build/fuzz
	rm -rf .bench
