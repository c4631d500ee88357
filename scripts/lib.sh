#!/usr/bin/env bash
# scripts/lib.sh: what the two quick-start commands share: install missing Debian packages,
# configure and build. Sourced, never run directly.
set -euo pipefail

MOAT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MOAT_BUILD="${MOAT_BUILD:-$MOAT_ROOT/build}"

# Every package the build, the tests and the benches need. Optional ones are still listed:
# the tests exercise both the ripgrep/fd back ends and the built-in ones, and the bench
# compares against bubblewrap; chromium opens the audit page headless (AuditHtml tests);
# slurm-wlm and munge run `moat batch` shards on a real engine (BatchSlurmTest).
MOAT_PACKAGES=(
  meson ninja-build pkg-config g++ libseccomp-dev libcap-dev libboost-dev nlohmann-json3-dev
  libcurl4-openssl-dev libtomlplusplus-dev libgtest-dev libgmock-dev libcli11-dev libssl-dev
  libutf8proc-dev libcpp-httplib-dev libsimdjson-dev libabsl-dev libbenchmark-dev ripgrep fd-find bubblewrap git
  python3 iproute2 passwd util-linux clang libclang-rt-14-dev chromium slurm-wlm munge
  cmake make python3-venv python3-pip python3-setuptools python3-wheel python3-pytest
)

moat_install_packages() {
  local missing=()
  for p in "${MOAT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    return 0
  fi
  echo "moat: installing missing packages: ${missing[*]}" >&2
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# moat_build [TARGET...]: configures once, then builds the targets (default: everything).
# MOAT_BUILDTYPE=release (the quick start's scripts/demo, in build-release/): optimised, no
# debug information. At -O2, not -O3: GCC 12 reports a false -Wrestrict (GCC bug 105651) in
# libstdc++'s `"literal" + std::string&&` at -O3 in a dozen files, and -O3 bought nothing
# measurable here; warnings stay errors. The tests keep debugoptimized in build/.
moat_build() {
  moat_configure
  ninja -C "$MOAT_BUILD" "$@" >&2
}

moat_configure() {
  local buildtype="${MOAT_BUILDTYPE:-debugoptimized}"
  local options=(--buildtype="$buildtype" -Dwerror=true)
  if [ "$buildtype" = release ]; then options+=(-Doptimization=2); fi
  if [ ! -f "$MOAT_BUILD/build.ninja" ]; then
    meson setup "$MOAT_BUILD" "$MOAT_ROOT" "${options[@]}" >&2
  fi
}

# The pinned MCP reference servers the end-to-end tests run inside the sandbox (docs/mcp.md),
# into $MOAT_BUILD/mcp-servers from tests/mcp-servers' package-lock.json: `npm ci` only when
# missing or when the lock changed, never in a test. Without npm the tests that need them skip.
moat_install_mcp_servers() {
  local dest="$MOAT_BUILD/mcp-servers" lock="$MOAT_ROOT/tests/mcp-servers/package-lock.json"
  if ! command -v npm >/dev/null; then
    echo "moat: npm not found: the MCP reference-server tests will skip" >&2
    return 0
  fi
  if cmp -s "$lock" "$dest/package-lock.json" && [ -d "$dest/node_modules" ]; then return 0; fi
  mkdir -p "$dest"
  cp "$MOAT_ROOT/tests/mcp-servers/package.json" "$lock" "$dest/"
  npm ci --prefix "$dest" --ignore-scripts --no-audit --no-fund >&2
}

# The servers' `npm ci` (network and disk, about 2 minutes in CI) runs beside the build, once
# the build directory is configured; a failed install fails the setup like a failed build.
moat_setup() {
  moat_install_packages
  moat_configure
  moat_install_mcp_servers &
  local npm_pid=$!
  local rc=0
  moat_build "$@" || rc=$?
  wait "$npm_pid" || rc=$((rc ? rc : $?))
  return "$rc"
}
