#!/usr/bin/env bash
# Runs every performance measurement of idemkey and prints, last, the
# summary lines BENCHMARKS.md reports (all numbers from this one run):
#
#   calls first=<n> first_one_trip=<n> replay=<n> replay_cached=<n> in_flight=<n>
#   fingerprint_speedup_vs_jcs size=64KiB x=<ratio>
#   fingerprint_raw_vs_sha256 size=64KiB ratio=<ratio>
#   middleware_overhead replay_cached_ns=<n> first_ns=<n> allocs_first=<n>
#   latency case=<floor|claim_first|one_trip|replay|replay_cached> p50_rtt=<x> p99_rtt=<y>
#   capacity mode=<claim_first|one_trip|separate_writes> outcome=<...> wcu=<x> rcu=<y>
#   record bytes_in_progress=<n> bytes_completed=<n> response=200 key=16
#   record wcu_commit response=<600|900> wcu=<x> powertools_units=<y>
#   emulator transact_vs_put=<ratio>
#   load guarded_vs_unguarded=<ratio>
#   sweep mode=<scan|index> records=<n> expired=<n> read_units=<x> write_units=<y>
#
# latency: BenchmarkLatency (handler/latency_bench_test.go), 16 clients,
# LATENCY_N requests per case (default 800) over the embedded emulator
# behind a 4 ms ± 1 ms seeded per-call latency; *_rtt is end-to-end
# latency over the configured 4 ms. capacity: TestCapacityPerOutcome
# (internal/capacity), units computed from the exact requests. record:
# TestRecordBytesStayWithinPowertools (internal/capacity), the key record's
# sizes as stored, by DynamoDB's item-size rules, and the write units its
# commit's transaction charges for it (powertools_units: Powertools'
# record of the same response, written alone).
#
#   scripts/bench.sh            # COUNT=6 runs of each benchmark, and a 10 s load run
#   COUNT=10 LOAD_DURATION=30s scripts/bench.sh
#
# Raw go test output and benchstat tables go to stderr and to $OUT
# (default bench-out/).
set -euo pipefail
cd "$(dirname "$0")/.."
count=${COUNT:-6}
out=${OUT:-bench-out}
mkdir -p "$out"
benchstat=(go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da)

echo "== DynamoDB calls per outcome (asserted by the test)" >&2
go test -count=1 -run '^TestCallsPerOutcomeSummary$' -v ./handler >"$out/calls.txt"
calls=$(grep '^calls ' "$out/calls.txt")

echo "== fingerprint vs gowebpki/jcs + SHA-256, raw vs crypto/sha256" >&2
go test -run '^$' -bench 'JSONDigest|JCSReference|DigestRaw|SHA256|Canonical/(sorted|reversed)' \
	-benchmem -count "$count" ./fingerprint | tee "$out/fingerprint.txt" >&2

echo "== middleware overhead (DynamoDB answered in process)" >&2
go test -run '^$' -bench 'Middleware' -benchmem -count "$count" ./handler | tee "$out/middleware.txt" >&2

echo "== sweeper throughput against the emulator" >&2
go test -run '^$' -bench 'Sweep' -benchtime 1x -count 3 ./dynamostore | tee "$out/sweep.txt" >&2 || true

for f in fingerprint middleware sweep; do
	echo "== benchstat $f" >&2
	"${benchstat[@]}" "$out/$f.txt" | tee "$out/$f.benchstat" >&2 || true
done

echo "== latency in round trips (16 clients, 4 ms ± 1 ms per call)" >&2
go test -run '^$' -bench '^BenchmarkLatency$' -benchtime "${LATENCY_N:-800}x" -count 1 ./handler | tee "$out/latency.txt" >&2

echo "== capacity units per outcome (asserted by the test)" >&2
go test -count=1 -run '^TestCapacityPerOutcome$' -v ./internal/capacity >"$out/capacity.txt"

echo "== key record bytes and the commit's write units (asserted by the test)" >&2
go test -count=1 -run '^TestRecordBytesStayWithinPowertools$' -v ./internal/capacity >"$out/record.txt"

echo "== eviction at scale: one full sweep, scan vs index mode, 2k/20k/200k records (asserted by the test)" >&2
go test -count=1 -timeout 30m -run '^TestSweepCapacityScanVsIndex$' -v ./internal/sweepbench -large >"$out/sweep-capacity.txt"

echo "== load: the payments example guarded vs unguarded, and the emulator's ceilings (wrk)" >&2
scripts/load.sh "${LOAD_DURATION:-10s}" "${LOAD_CONNECTIONS:-16}" | tee "$out/load.txt" >&2

# mean NAME FILE COLUMN-UNIT: the mean of the value before UNIT on the
# lines of benchmark NAME (its -N CPU suffix ignored).
mean() {
	awk -v name="$1" -v unit="$3" '
		{ n = $1; sub(/-[0-9]+$/, "", n) }
		n == name { for (i = 2; i < NF; i++) if ($(i+1) == unit) { s += $i; c++ } }
		END { if (c) printf "%.1f", s / c; else print "NaN" }' "$2"
}
fp=$out/fingerprint.txt
mw=$out/middleware.txt
jcs=$(mean BenchmarkJCSReference/64KiB "$fp" ns/op)
ours=$(mean BenchmarkJSONDigest/64KiB "$fp" ns/op)
raw=$(mean BenchmarkDigestRaw "$fp" ns/op)
sha=$(mean BenchmarkSHA256 "$fp" ns/op)
bare=$(mean BenchmarkMiddleware/bare "$mw" ns/op)
first=$(mean BenchmarkMiddleware/first "$mw" ns/op)
cached=$(mean BenchmarkMiddleware/replay_cached "$mw" ns/op)
bare_allocs=$(mean BenchmarkMiddleware/bare "$mw" allocs/op)
first_allocs=$(mean BenchmarkMiddleware/first "$mw" allocs/op)

echo "$calls"
awk -v a="$jcs" -v b="$ours" 'BEGIN { printf "fingerprint_speedup_vs_jcs size=64KiB x=%.1f\n", a / b }'
awk -v a="$sha" -v b="$raw" 'BEGIN { printf "fingerprint_raw_vs_sha256 size=64KiB ratio=%.2f\n", a / b }'
awk -v b="$bare" -v c="$cached" -v f="$first" -v ba="$bare_allocs" -v fa="$first_allocs" \
	'BEGIN { printf "middleware_overhead replay_cached_ns=%.0f first_ns=%.0f allocs_first=%.0f\n", c - b, f - b, fa - ba }'
awk '/^BenchmarkLatency\// {
		n = $1; sub(/^BenchmarkLatency\//, "", n); sub(/-[0-9]+$/, "", n)
		for (i = 2; i < NF; i++) { if ($(i+1) == "p50_rtt") p50 = $i; if ($(i+1) == "p99_rtt") p99 = $i }
		printf "latency case=%s p50_rtt=%.3f p99_rtt=%.3f\n", n, p50, p99
	}' "$out/latency.txt"
grep '^capacity ' "$out/capacity.txt"
grep '^record ' "$out/record.txt"

grep -E '^emulator transact_vs_put=|^load guarded_vs_unguarded=' "$out/load.txt"
grep '^sweep mode=' "$out/sweep-capacity.txt"
