// Package regionsim simulates DynamoDB global tables in one process, to
// show what each multi-region mode of idemkey does under retries, lag and
// outages. It is used by the tests of package multiregion and by
// cmd/multiregion-sim (scripts/multiregion-sim.sh).
//
// A Cluster is several embedded emulators (package localstack), one per
// region, joined by a replicator: every committed write in one region is
// captured at the HTTP level, in front of the emulator, and applied to the
// other regions after a lag, resolving conflicts last writer wins, as on a
// multi-Region eventually consistent (MREC) table. A conditional write in
// one region is checked against that region's copy only. A region can be
// cut off: its clients get connection errors and replication to and from it
// waits until it is restored. With Options.Shared, every region is a client
// of one emulator instead: one linearizable copy, the model of a
// multi-Region strongly consistent (MRSC) table. It does not model
// ReplicatedWriteConflictException or MRSC's higher write latency.
//
// Run plays a seeded Scenario (logical operations whose answers get lost
// and whose clients retry into another region, a regional outage) against
// a mode (naive, home, home-failover, strong) on a new cluster, on a virtual
// clock, and counts requests, duplicates and 503s.
//
// It is a test instrument, not a DynamoDB model to draw latency or
// capacity conclusions from: requests take no virtual time (so no request
// is ever in flight when another arrives), replication is applied between
// requests, BatchWriteItem is not replicated, TTL deletes happen only when
// Cluster.ExpireTTL plays them (and then replicate, last writer wins, as on
// DynamoDB), and only tables created with Cluster.CreateGlobalTable are
// replicated.
package regionsim
