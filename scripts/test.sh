#!/usr/bin/env bash
# Set up what the tests need (when missing) and run the whole suite: ruff, then ONE pytest run over
# tests/ and notebooks/ (nbval; see [tool.pytest.ini_options] in pyproject.toml).
#
#   bash scripts/test.sh                 # everything
#   bash scripts/test.sh -k smoke -x     # extra arguments go to pytest
#   bash scripts/test.sh -m "not e2e"    # skip the browser tests for a quick local loop
#
# Environment: PYTHON (default: python, else python3); AHP_NO_INSTALL=1 skips the install steps.
# Browser tests use Debian's /usr/bin/chromium; never run `playwright install`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON="${PYTHON:-$(command -v python || command -v python3 || true)}"
if [[ -z "$PYTHON" ]]; then
  echo "scripts/test.sh: no python found (need Python 3.11+ with pip)" >&2
  exit 2
fi
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1

start_all=$SECONDS
step() { printf '\n==> [%4ss] %s\n' "$((SECONDS - start_all))" "$*"; }

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then SUDO=(sudo); fi
apt_install() {
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"
}

if [[ "${AHP_NO_INSTALL:-0}" != 1 ]]; then
  if [[ ! -x /usr/bin/chromium ]]; then
    step "installing Debian chromium (for the browser tests)"
    apt_install chromium
  fi

  step "pip install -e .[test]"
  "$PYTHON" -m pip install -q -e ".[test]"

  if [[ -f js/package.json ]]; then
    if ! command -v npm >/dev/null; then
      step "installing nodejs and npm (for js/)"
      apt_install nodejs npm
    fi
    pushd js >/dev/null
    if [[ ! -f node_modules/.package-lock.json || package.json -nt node_modules/.package-lock.json ||
      (-f package-lock.json && package-lock.json -nt node_modules/.package-lock.json) ]]; then
      if [[ -f package-lock.json ]]; then
        step "npm ci (js/)"
        npm ci --no-audit --no-fund
      else
        step "npm install (js/)"
        npm install --no-audit --no-fund
      fi
    fi
    step "npm run build (js/)"
    npm run build --if-present
    popd >/dev/null
  fi
fi

step "ruff check . && ruff format --check ."
"$PYTHON" -m ruff check .
"$PYTHON" -m ruff format --check .

step "pytest (tests/ + notebooks/ via nbval) $*"
rc=0
"$PYTHON" -m pytest "$@" || rc=$?
step "done: pytest exit code $rc"
exit "$rc"
