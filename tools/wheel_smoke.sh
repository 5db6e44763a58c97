#!/usr/bin/env bash
# What a new user gets from PyPI, checked from a built wheel (never the source tree):
#   1. `pip install <wheel>` in a fresh venv, then the README's quick start (examples/quickstart.py)
#      prints what it says it prints;
#   2. `pip install "<wheel>[server]"`, then `oam serve` starts, says where, and answers /readyz;
#   3. with Oracle's `oracleagentmemory` distribution installed beneath it (both own the
#      `oracleagentmemory` package), `import oracleagentmemory` is one clear ImportError.
# Usage: tools/wheel_smoke.sh [PYTHON]   (run by `make test-wheel`, part of `make test`)
set -euo pipefail
PY=${1:-python3.11}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/oam-wheel-XXXXXX")
SERVER_PID=
cleanup() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

echo "wheel-smoke: building the wheel"
"$PY" -m pip wheel --quiet --no-deps --wheel-dir "$WORK/dist" "$ROOT" >/dev/null
WHEEL=$(ls "$WORK"/dist/recallwell-*.whl)
"$PY" -m venv "$WORK/venv"
VPY="$WORK/venv/bin/python"
"$VPY" -m pip install --quiet --upgrade pip

echo "wheel-smoke: pip install $(basename "$WHEEL"), then the quick start"
"$VPY" -m pip install --quiet "$WHEEL"
mkdir "$WORK/run" && cd "$WORK/run"
OUT=$("$VPY" "$ROOT/examples/quickstart.py")
EXPECTED=$(sed -n 's/.*# prints: //p' "$ROOT/examples/quickstart.py")
if [ "$OUT" != "$EXPECTED" ]; then
  printf 'wheel-smoke: the quick start printed\n%s\ninstead of\n%s\n' "$OUT" "$EXPECTED" >&2
  exit 1
fi
"$VPY" -c "import oracleagentmemory, sys; sys.exit('imported from the source tree') \
  if '$ROOT' in oracleagentmemory.__file__ else None"

echo "wheel-smoke: pip install \"$(basename "$WHEEL")[server]\", then oam serve"
"$VPY" -m pip install --quiet "$WHEEL[server]"
PORT=$("$VPY" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
"$WORK/venv/bin/oam" serve --dsn "$WORK/run/served.db" --port "$PORT" >"$WORK/serve.log" 2>&1 &
SERVER_PID=$!
READY=
for _ in $(seq 1 120); do
  if "$VPY" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$PORT/readyz', timeout=2)" 2>/dev/null; then
    grep -q "http://127.0.0.1:$PORT" "$WORK/serve.log" || {
      echo "wheel-smoke: oam serve answered but printed no start-up line with its URL:" >&2
      cat "$WORK/serve.log" >&2; exit 1; }
    READY=1
    break
  fi
  kill -0 "$SERVER_PID" 2>/dev/null || break
  sleep 1
done
if [ -z "$READY" ]; then
  echo "wheel-smoke: oam serve did not answer /readyz:" >&2
  cat "$WORK/serve.log" >&2
  exit 1
fi
kill "$SERVER_PID" 2>/dev/null; SERVER_PID=

echo "wheel-smoke: Oracle's oracleagentmemory 26.8.0 installed beneath it, then import"
if "$VPY" -m pip install --quiet --no-deps oracleagentmemory==26.8.0 2>"$WORK/oracle.log"; then
  "$VPY" -m pip install --quiet --no-deps --force-reinstall "$WHEEL"
  if "$VPY" -c "import oracleagentmemory" 2>"$WORK/import.log"; then
    echo "wheel-smoke: importing beside Oracle's distribution did not fail" >&2; exit 1
  fi
  grep -q "ImportError: two distributions in this environment install the 'oracleagentmemory'" \
    "$WORK/import.log" || { echo "wheel-smoke: unexpected import failure:" >&2; cat "$WORK/import.log" >&2; exit 1; }
else
  echo "wheel-smoke: NOTE Oracle's distribution could not be downloaded, that step is skipped:"
  tail -1 "$WORK/oracle.log"
fi
echo "wheel-smoke: ok (quick start and oam serve from the wheel; a clear error beside Oracle's)"
