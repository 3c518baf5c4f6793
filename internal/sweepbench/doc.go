// Package sweepbench holds the benchmark of eviction at scale: the
// capacity one full sweep consumes in SweepScan and in SweepIndex mode
// over key tables of 2,000 and 20,000 records (and 200,000 with -large, as
// scripts/bench.sh runs it) that hold the same 1,000 records to remove,
// and the write capacity the expiry index adds to each request of a
// Store. Its test (TestSweepCapacityScanVsIndex) prints the figures
// BENCHMARKS.md and docs/eviction.md report and asserts what they must
// show. It has no code of its own outside its tests.
package sweepbench
