# Postern — developer and CI entry points (DESIGN §5).

SWIFT    ?= swift
POSTERN  := .build/debug/postern
CONFIG   ?= config/postern.json
DEB_DEPS := libevent-dev libssl-dev libsqlite3-dev pkg-config

.DEFAULT_GOAL := build
.PHONY: deps build release test run check bench clean

## deps: install the Debian packages the build needs (only those missing)
deps:
	@bash scripts/deps.sh $(DEB_DEPS)

## build: debug build
build: deps
	$(SWIFT) build

## release: optimised build
release: deps
	$(SWIFT) build -c release

## test: everything CI runs
test: deps
	$(SWIFT) test

## run: the gateway on :8080 in front of the built-in Directus stand-in on :8055
run: deps build
	$(POSTERN) demo

## check: validate the shipped config
check: build
	$(POSTERN) check --config $(CONFIG)

## bench: gateway vs nginx vs stand-in (scripts/bench.sh)
bench: deps
	bash scripts/bench.sh

clean:
	$(SWIFT) package clean
	rm -rf .bench
