#!/usr/bin/env bash
# tests/golden/capture.sh: recaptures the golden request frames from real clients.
# Installs kafkajs from the committed lock file if needed, then runs
# capture.py (all scenarios, or those matching the words given).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ ! -d tests/clients/node_modules/kafkajs ]; then
  (cd tests/clients && npm ci --no-audit --no-fund --loglevel=error)
fi
exec /usr/bin/python3 tests/golden/capture.py "$@"
