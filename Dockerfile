# Postern container image (README, Run with Docker; docs/docker.md).
#
#   docker build -t postern:local .
#   docker run --rm -p 8080:8080 -e POSTERN_DIRECTUS_URL=http://directus:8055 postern:local
#
# Both stages are Debian 12 "bookworm": the build stage is the official Swift image for bookworm,
# the runtime stage bookworm-slim, so the shared libraries the binary was linked against are the
# ones installed below. scripts/check-runtime-libs.sh (make check-docker, part of make test) builds
# the release binary with the same flags, runs ldd on it and fails if the runtime list below misses
# a package; keep the `swift build` line and the runtime `apt-get install` list in the shapes that
# script parses (one `swift build` invocation; one `apt-get install` in the runtime stage).

# ---------------------------------------------------------------------------------------------
# Build stage: Swift 6.3 on Debian 12, plus the -dev packages of `make deps` (Makefile DEB_DEPS).
FROM swift:6.3-bookworm AS build

# Versions are not pinned (DL3008): the release's current packages, security updates included.
# hadolint ignore=DL3008
RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get update -q \
    && apt-get install -y -q --no-install-recommends libevent-dev libssl-dev libsqlite3-dev libhiredis-dev node-llhttp libjemalloc-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
# Package.swift declares the test target, so SwiftPM wants Tests/ present even for `swift build`.
COPY Package.swift ./
COPY Sources ./Sources
# The EmbedText build plugin compiles the console's CSS and JavaScript into PosternCore.
COPY Plugins ./Plugins
COPY Tests ./Tests

# The Swift runtime, Dispatch and FoundationEssentials are linked statically (the shipped code imports no full
# Foundation, so no ICU: docs/docker.md), and so is llhttp (compiled from node-llhttp's C sources); what stays
# dynamic is libevent, OpenSSL, SQLite, hiredis, jemalloc and the C/C++ runtime (checked against the list below
# by scripts/check-runtime-libs.sh).
RUN swift build -c release --static-swift-stdlib \
    && install -D -m 0755 .build/release/postern /out/postern \
    && /out/postern version

# Stripped (symbols and debug info: 31.5 MB -> 16.4 MB); a separate layer so the build above stays cached.
# The image's config is config/postern.json with the sessions on the volume; it sets listen, admin_listen and
# sessions.store itself, so that a file mounted over it decides them (no ENV overrides it: docs/docker.md).
COPY config/postern.json /out/postern.json.in
RUN strip --strip-all /out/postern \
    && sed 's#"store": "sqlite:data/sessions.db"#"store": "sqlite:/var/lib/postern/sessions.db"#' \
        /out/postern.json.in > /out/postern.json \
    && grep -q '"store": "sqlite:/var/lib/postern/sessions.db"' /out/postern.json \
    && /out/postern check --config /out/postern.json

# ---------------------------------------------------------------------------------------------
# Runtime stage: the same Debian release, only the shared libraries the binary links.
FROM debian:bookworm-slim

# ldd of the release binary -> Debian packages (bookworm names):
#   libevent-2.1.so.7 -> libevent-2.1-7            libevent_core-2.1.so.7 -> libevent-core-2.1-7
#   libevent_pthreads-2.1.so.7 -> libevent-pthreads-2.1-7
#   libssl.so.3, libcrypto.so.3 -> libssl3         libsqlite3.so.0 -> libsqlite3-0
#   libhiredis.so.0.14 -> libhiredis0.14
#   libjemalloc.so.2 -> libjemalloc2 (the allocator)
#   libstdc++.so.6 -> libstdc++6                   (libc6 and libgcc-s1 are in every Debian image)
# ca-certificates: trust store for an https:// POSTERN_DIRECTUS_URL and a rediss:// session store (certificates are verified).
# hadolint ignore=DL3008
RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get update -q \
    && apt-get install -y -q --no-install-recommends \
        ca-certificates \
        libevent-2.1-7 \
        libevent-core-2.1-7 \
        libevent-pthreads-2.1-7 \
        libssl3 \
        libsqlite3-0 \
        libhiredis0.14 \
        libjemalloc2 \
        libstdc++6 \
    && rm -rf /var/lib/apt/lists/*

# A fixed non-root uid/gid (10001) so volumes and orchestrators (runAsNonRoot) can rely on it.
# /var/lib/postern holds the SQLite session store; a new named volume mounted there inherits the
# owner and mode 0700 from the image.
RUN groupadd --system --gid 10001 postern \
    && useradd --system --uid 10001 --gid postern --home-dir /var/lib/postern --no-create-home \
        --shell /usr/sbin/nologin postern \
    && install -d -o postern -g postern -m 0700 /var/lib/postern

COPY --from=build /out/postern /usr/local/bin/postern
COPY --from=build /out/postern.json /etc/postern/postern.json

# Only the file's path comes from the environment. The file says listen 0.0.0.0:8080, admin_listen
# 127.0.0.1:9180 (the admin listener, /metrics, /healthz, /readyz, stays on the container's loopback and
# is deliberately not EXPOSEd; the public port answers /healthz and /readyz too, and the HEALTHCHECK
# uses it) and sessions.store sqlite:/var/lib/postern/sessions.db. `postern check` names any value
# that a POSTERN_* variable set instead.
ENV POSTERN_CONFIG=/etc/postern/postern.json

VOLUME ["/var/lib/postern"]
WORKDIR /var/lib/postern
USER 10001:10001
EXPOSE 8080

# No curl in a slim image: the binary probes its own /healthz (docs/api.md, Configuration).
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
    CMD ["postern", "healthcheck"]

ENTRYPOINT ["postern"]
CMD ["serve"]
