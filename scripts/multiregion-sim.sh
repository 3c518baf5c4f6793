#!/usr/bin/env bash
# Runs the multi-region idempotency simulation (internal/regionsim) with the
# given seed (default 1) and prints one line per mode (by default every mode:
# regionsim.Modes naive, home, home-failover, strong, home-topology-change;
# the fence scenarios home-failover-zombie, home-failover-replica,
# home-ttl-replicated; and the combined scenarios, which join the options a
# deployment runs together, with every region's sweeper and clocks skewed
# between regions; see multiregion/README.md):
#
#   mode=<name> requests=<n> logical_ops=<n> duplicates=<n> unavailable=<n>
#
# The combined scenarios (20 episodes per seed at the default -ops 200):
#   home-rehome-sweep          a pin change moves a key with an abandoned claim
#                              to a new home while the old home sweeps
#   home-failover-chain        the home dark, a failover region stalls or goes
#                              dark, the retry fails over to a second one
#   home-failover-topology     a failover before a pin change, and the home cut
#                              off again during it (failover is suspended: 503)
#   home-region-removed        a region that homed keys and took failovers is
#                              removed; the remaining regions sweep its records
#   home-skewed-clocks         clocks within multiregion.MaxClockSkew: retries
#                              at the end of a lease and of a retention
#   home-skewed-clocks-beyond  the same with clocks up to 4x the bound apart:
#                              where it breaks
# HomeRegion without failover has duplicates=0 in every one of them over seeds
# 1-20; with failover, duplicates occur only within the replication lag window
# and Reconcile reports every one (the details line on stderr:
# duplicates_in_lag_window, fence_reported, executions, leftover); the
# -beyond scenario shows the duplicates a skew past the bound makes.
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
