#!/usr/bin/env bash
# Runs every performance measurement of idemkey and prints, last, the
# summary lines BENCHMARKS.md reports (all numbers from this one run):
#
#   calls first=<n> first_one_trip=<n> replay=<n> replay_cached=<n> in_flight=<n>
#   fingerprint_speedup_vs_jcs size=64KiB x=<ratio>
#   fingerprint_raw_vs_sha256 size=64KiB ratio=<ratio>
#   middleware_overhead replay_cached_ns=<n> first_ns=<n> allocs_first=<n>
#
#   scripts/bench.sh            # COUNT=6 runs of each benchmark
#   COUNT=10 LOAD=1 scripts/bench.sh   # also the wrk load test (scripts/load.sh)
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

if [ "${LOAD:-0}" = 1 ]; then
	scripts/load.sh | tee "$out/load.txt"
fi

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
