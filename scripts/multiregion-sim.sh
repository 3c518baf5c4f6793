#!/usr/bin/env bash
# Runs the multi-region idempotency simulation (internal/regionsim) with the
# given seed (default 1) and prints one line per mode (by default every mode
# of regionsim.Modes: naive, home, home-failover, strong,
# home-topology-change and the fence scenarios; see multiregion/README.md):
#
#   mode=<name> requests=<n> logical_ops=<n> duplicates=<n> unavailable=<n>
#
# then the fence results of home-failover. Extra flags after the seed are
# passed to cmd/multiregion-sim (-ops, -lag, -loss, -outage-start, -outage-end,
# -regions, -modes). Details go to stderr.
#
#   scripts/multiregion-sim.sh 3
#   scripts/multiregion-sim.sh 3 -lag 500ms -ops 400
set -euo pipefail

seed="${1:-1}"
if [[ $# -gt 0 ]]; then
	shift
fi
if ! [[ "$seed" =~ ^[0-9]+$ ]]; then
	echo "usage: $0 [seed] [flags of cmd/multiregion-sim]" >&2
	exit 2
fi

cd "$(dirname "$0")/.."
exec go run ./cmd/multiregion-sim -seed "$seed" "$@"
