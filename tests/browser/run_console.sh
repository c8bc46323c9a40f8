#!/usr/bin/env bash
# The console in a real browser (tests/browser/console_test.mjs): Debian's
# Chromium driven by playwright-core from the npm registry (pinned in
# package-lock.json). Needs node, npm and chromium (.ci/deps installs them).
#   run_console.sh GPULSE_BINARY SCREENSHOT_DIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
for tool in node npm "${CHROMIUM:-/usr/bin/chromium}"; do
  command -v "$tool" >/dev/null ||
    { echo "run_console: '$tool' is missing; install it (.ci/deps installs nodejs, npm, chromium)" >&2; exit 1; }
done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
timeout 180 npm ci --prefix "$here" --no-audit --no-fund --loglevel=error >"$log" 2>&1 ||
  { cat "$log" >&2; echo "run_console: npm ci failed" >&2; exit 1; }
cd "$here"
timeout 240 node console_test.mjs "$1" "$2"
