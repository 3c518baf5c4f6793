// Package sweepbench holds the benchmark of eviction at scale: the
// capacity one full sweep consumes in SweepScan and in SweepIndex mode
// over key tables of 2,000, 20,000 and 200,000 records that hold the same
// 1,000 records to remove, and the write capacity the expiry index adds to
// each request of a Store. Its test (TestSweepCapacityScanVsIndex) prints
// the figures BENCHMARKS.md and docs/eviction.md report and asserts what they
// must show; scripts/bench.sh runs it. It has no code of its own outside
// its tests.
package sweepbench
