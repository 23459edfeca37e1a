#!/usr/bin/env bash
# Checks that the Dockerfile's runtime stage installs every shared library the release binary links.
#
#  1. The Dockerfile's `swift build` flags must be exactly BUILD_FLAGS below (same binary as here),
#     its build stage must install the Makefile's DEB_DEPS, and both stages the same distro release.
#  2. Builds the release binary with those flags and runs ldd on it.
#  3. Maps each library to its Debian package with dpkg -S and fails if the runtime stage's
#     `apt-get install` list misses one (libc6 and libgcc-s1 are in every Debian base image).
#
# Usage: scripts/check-runtime-libs.sh [--no-build]   (--no-build: use the existing binary)
# Needs: a Debian/Ubuntu host with dpkg and ldd, the Swift toolchain and the -dev packages (make deps).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

DOCKERFILE=${DOCKERFILE:-Dockerfile}
BUILD_FLAGS="-c release --static-swift-stdlib"
BINARY=.build/release/postern
# Present in every debian:*-slim / ubuntu image (libc6 depends on libgcc-s1): not listed.
BASE_PACKAGES="libc6 libgcc-s1"

fail() { echo "check-runtime-libs: FAIL: $*" >&2; exit 1; }
note() { echo "check-runtime-libs: $*"; }

build=1
[ "${1:-}" = "--no-build" ] && build=0

[ -f "$DOCKERFILE" ] || fail "$DOCKERFILE not found"
command -v dpkg >/dev/null || fail "dpkg not found: this check needs a Debian/Ubuntu host"
command -v ldd >/dev/null || fail "ldd not found"

# The Dockerfile with backslash continuations joined and comments dropped, one instruction a line.
instructions() {
    sed -e '/^[[:space:]]*#/d' "$DOCKERFILE" | awk '
        /\\[[:space:]]*$/ { sub(/\\[[:space:]]*$/, ""); buffer = buffer $0 " "; next }
        { print buffer $0; buffer = "" }
        END { if (buffer != "") print buffer }'
}

# --- 1. build flags -----------------------------------------------------------------------------
# Every `swift build` in the Dockerfile, its arguments up to the next &&, ;, | or end of line.
mapfile -t docker_builds < <(instructions | grep -o 'swift build[^&;|]*' | sed -e 's/^swift build//' \
    | tr -s '[:space:]' ' ' | sed -e 's/^ //' -e 's/ $//')
[ "${#docker_builds[@]}" -gt 0 ] || fail "no 'swift build' in $DOCKERFILE"
for flags in "${docker_builds[@]}"; do
    [ "$flags" = "$BUILD_FLAGS" ] || fail "$DOCKERFILE builds with 'swift build $flags' but this check (and the
    binary it inspects) uses 'swift build $BUILD_FLAGS'; make them the same (here: BUILD_FLAGS)"
done
note "Dockerfile build flags match: swift build $BUILD_FLAGS"
# The Makefile's `release` and the benchmarks build the same binary.
makefile_flags="$(sed -n 's/^RELEASE_FLAGS[[:space:]]*:=[[:space:]]*//p' Makefile | tr -s '[:space:]' ' ' | sed -e 's/ $//')"
[ "$makefile_flags" = "$BUILD_FLAGS" ] || fail "the Makefile's RELEASE_FLAGS are '$makefile_flags', not '$BUILD_FLAGS'"
bench_flags="$(sed -n 's/^RELEASE_FLAGS="\(.*\)"$/\1/p' bench/lib.sh)"
[ "$bench_flags" = "$BUILD_FLAGS" ] || fail "bench/lib.sh builds with RELEASE_FLAGS='$bench_flags', not '$BUILD_FLAGS'"
note "Makefile release and bench/lib.sh flags match"

# --- the stages: build and runtime must be the same distribution release -------------------------
mapfile -t from_images < <(instructions | awk 'toupper($1) == "FROM" {
    for (i = 2; i <= NF; i++) if ($i !~ /^--/) { print $i; break } }')
[ "${#from_images[@]}" -ge 2 ] || fail "$DOCKERFILE should have a build stage and a runtime stage"
build_image=${from_images[0]}
runtime_image=${from_images[${#from_images[@]}-1]}
codename_of() {   # bookworm, noble, jammy, ... out of an image reference
    echo "$1" | grep -oE 'bookworm|bullseye|trixie|noble|jammy|focal|(ubuntu|debian):[0-9.]+' | head -1
}
build_release=$(codename_of "$build_image")
runtime_release=$(codename_of "$runtime_image")
[ -n "$build_release" ] || fail "cannot tell the distribution release of the build image $build_image"
[ -n "$runtime_release" ] || fail "cannot tell the distribution release of the runtime image $runtime_image"
case "$build_release:$runtime_release" in
    bookworm:debian:12*|noble:ubuntu:24.04*|jammy:ubuntu:22.04*|focal:ubuntu:20.04*) ;;
    *) [ "$build_release" = "$runtime_release" ] || fail "build image $build_image ($build_release) and runtime image \
$runtime_image ($runtime_release) are different releases: library versions would not match" ;;
esac
note "stages: $build_image -> $runtime_image"

# --- the build stage installs the -dev packages of `make deps` (Makefile DEB_DEPS) ---------------
build_stage_packages=$(instructions | awk 'toupper($1) == "FROM" { n++ } n == 1' \
    | grep -o 'apt-get install[^&;]*' | sed 's/^apt-get install//' | tr ' ' '\n' | grep -v '^-' | grep -v '^$' || true)
make_deps=$(sed -n 's/^DEB_DEPS[[:space:]]*:\{0,1\}=[[:space:]]*//p' Makefile)
[ -n "$make_deps" ] || fail "no DEB_DEPS in the Makefile"
for package in $make_deps; do
    grep -qx "$package" <<<"$build_stage_packages" \
        || fail "the build stage of $DOCKERFILE does not install $package (Makefile DEB_DEPS: $make_deps)"
done
note "build stage installs the Makefile's DEB_DEPS: $make_deps"

# --- the runtime stage's package list --------------------------------------------------------------
# Words after `apt-get install` in the last stage (options dropped), up to && or ;.
runtime_packages=$(instructions | awk 'toupper($1) == "FROM" { stage = "" } { stage = stage $0 "\n" }
    END { printf "%s", stage }' | grep -o 'apt-get install[^&;]*' | sed 's/^apt-get install//' \
    | tr ' ' '\n' | grep -v '^-' | grep -v '^$' | sort -u || true)
[ -n "$runtime_packages" ] || fail "no 'apt-get install' package list in the runtime stage of $DOCKERFILE"

# --- 2. build and ldd ------------------------------------------------------------------------------
if [ "$build" -eq 1 ]; then
    note "swift build $BUILD_FLAGS"
    # shellcheck disable=SC2086
    swift build $BUILD_FLAGS
fi
[ -x "$BINARY" ] || fail "$BINARY not found (build it: swift build $BUILD_FLAGS)"

ldd_output=$(ldd "$BINARY") || fail "ldd $BINARY failed"
if grep -q 'not found' <<<"$ldd_output"; then
    fail "ldd: unresolved libraries on this host:
$(grep 'not found' <<<"$ldd_output")"
fi
if grep -qE 'libswift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime' <<<"$ldd_output"; then
    fail "the binary links the Swift runtime dynamically; --static-swift-stdlib should have linked it in:
$(grep -E 'libswift|Foundation|libdispatch|libBlocksRuntime' <<<"$ldd_output")"
fi

# The shipped binary is on FoundationEssentials: full Foundation would link ICU back in (its data, icudt*_dat, is
# 34 MB of a 60 MB binary; docs/docker.md, The image).
if nm "$BINARY" | grep -qE ' icudt[0-9]+_dat$|FoundationInternationalization|s10Foundation'; then
    fail "$BINARY links full Foundation (ICU); the targets it is built from import FoundationEssentials only"
fi
note "no Foundation/ICU in $BINARY (FoundationEssentials only)"

# --- 3. library -> package ---------------------------------------------------------------------------
package_of() {   # the Debian package that ships the library at path $1 (usr-merge aware)
    local path=$1 real candidates
    real=$(readlink -f "$path")
    candidates=("$path" "$real")
    case "$path" in /lib/*|/lib64/*) candidates+=("/usr$path") ;; /usr/lib/*) candidates+=("${path#/usr}") ;; esac
    case "$real" in /lib/*|/lib64/*) candidates+=("/usr$real") ;; /usr/lib/*) candidates+=("${real#/usr}") ;; esac
    for candidate in "${candidates[@]}"; do
        local owner
        owner=$(dpkg -S "$candidate" 2>/dev/null | head -1 | cut -d: -f1) || true
        [ -n "$owner" ] && { echo "$owner"; return 0; }
    done
    return 1
}

# `t64`: Ubuntu 24.04+/Debian 13 renamed many library packages (libssl3 -> libssl3t64); compare both ways.
normalise() { sed -e 's/t64$//'; }

declare -A needed=()
while read -r name _ path _; do
    [ "${path:-}" ] && [ "${path:0:1}" = "/" ] || continue   # linux-vdso and the loader line
    package=$(package_of "$path") || fail "no Debian package owns $path ($name); cannot check it"
    needed[$package]+="${needed[$package]:+, }$name"
done <<<"$ldd_output"

# shellcheck source=/dev/null
host_release=$(. /etc/os-release && echo "${VERSION_CODENAME:-$ID:$VERSION_ID}")
case "$host_release:$runtime_release" in
    "$runtime_release:$runtime_release"|bookworm:debian:12*|noble:ubuntu:24.04*|jammy:ubuntu:22.04*) ;;
    *) note "warning: this host is $host_release, the runtime image is $runtime_release: package names" \
            "are compared without a t64 suffix and may still differ" ;;
esac

normalised_runtime=$(normalise <<<"$runtime_packages")
missing=()
for package in $(printf '%s\n' "${!needed[@]}" | sort); do
    if tr ' ' '\n' <<<"$BASE_PACKAGES" | grep -qx "$package"; then
        note "  $package (${needed[$package]}): in the base image"
    elif grep -qx "$(normalise <<<"$package")" <<<"$normalised_runtime"; then
        note "  $package (${needed[$package]}): installed"
    else
        missing+=("$package (${needed[$package]})")
    fi
done

if [ "${#missing[@]}" -gt 0 ]; then
    fail "the runtime stage of $DOCKERFILE does not install:
$(printf '    %s\n' "${missing[@]}")
  The release binary ($BINARY, swift build $BUILD_FLAGS) links these libraries (ldd); add the packages
  to the runtime stage's apt-get install list."
fi

# Packages installed but not linked: only a note (ca-certificates is data, not a library).
for package in $runtime_packages; do
    linked=0
    for want in "${!needed[@]}"; do
        [ "$(normalise <<<"$want")" = "$(normalise <<<"$package")" ] && linked=1
    done
    [ "$linked" -eq 1 ] || note "  note: $package is installed but not linked by the binary"
done
note "OK: every library the release binary links is in the runtime image"
