package multiregion

import (
	"strconv"
	"sync/atomic"
)

// EventKind names a routing decision that an operator should be able to
// count and alert on.
type EventKind int

const (
	// EventFailover: the key's home region was unreachable and a claim was
	// made (or answered) in Region instead. Every such decision is reported,
	// whatever its outcome. Each one is a possible duplicate until Reconcile
	// has looked at the key.
	EventFailover EventKind = iota + 1
	// EventFailClosed: the key's home region was unreachable and failover is
	// off (Region is the home), or failover found no reachable region
	// either (Region is the last one tried); the request is refused as
	// unavailable and nothing executes.
	EventFailClosed
	// EventFenceCheckSkipped: a first execution in the home region could not
	// read Region's failover record of the key, and the home region's
	// replica held none either; it went ahead, so a failover execution
	// there that had not replicated (one within the replication lag before
	// Region became unreachable), if any, is left for Reconcile to report.
	EventFenceCheckSkipped
	// EventPromoted: a failover record executed in Region was copied into
	// the key's home record (by a claim in the home region or by
	// Reconcile); retries are answered from the home region from now on.
	EventPromoted
	// EventTwoRegionExecution: the key executed in the home region and in
	// Region (or in two failover regions): a duplicate. Reported by
	// Reconcile.
	EventTwoRegionExecution
	// EventConflictRetry: Strong mode: a write failed with
	// ReplicatedWriteConflictException and is retried after a backoff.
	EventConflictRetry
	// EventRegionFallback: Strong mode: the preferred region was
	// unreachable and Region served the call instead (safe on MRSC tables).
	EventRegionFallback
	// EventFenceFromReplica: a first execution in the home region could
	// not read Region's failover record of the key in Region, and decides
	// from the copy replicated into the home region instead.
	EventFenceFromReplica
	// EventRetired: a first execution in the home region found Region's
	// failover record of the key abandoned (in progress, lock expired) and
	// retired it there before executing: its owner, should it resume, can
	// no longer commit.
	EventRetired
	numEventKinds = iota
)

func (k EventKind) String() string {
	switch k {
	case EventFailover:
		return "failover"
	case EventFailClosed:
		return "fail_closed"
	case EventFenceCheckSkipped:
		return "fence_check_skipped"
	case EventPromoted:
		return "promoted"
	case EventTwoRegionExecution:
		return "two_region_execution"
	case EventConflictRetry:
		return "conflict_retry"
	case EventRegionFallback:
		return "region_fallback"
	case EventFenceFromReplica:
		return "fence_from_replica"
	case EventRetired:
		return "retired"
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// Event is one routing decision, passed to Options.Observer.
type Event struct {
	Kind       EventKind
	Scope, Key string
	// Home is the key's home region (HomeRegion mode).
	Home string
	// Region is the region the decision is about: where the request went
	// instead (failover, fallback), where a failover record lives (fence
	// events), or the region that failed (fail closed, conflict).
	Region string
	// Err is the error that caused the decision, if any.
	Err error
}

// Counters counts events by kind. Its Observe method is an Observer; it is
// safe for concurrent use, and its zero value is ready to use.
type Counters struct {
	n [numEventKinds + 1]atomic.Int64
}

// Observe counts e.
func (c *Counters) Observe(e Event) {
	if e.Kind > 0 && int(e.Kind) < len(c.n) {
		c.n[e.Kind].Add(1)
	}
}

// Count returns how many events of kind were observed.
func (c *Counters) Count(kind EventKind) int64 {
	if kind <= 0 || int(kind) >= len(c.n) {
		return 0
	}
	return c.n[kind].Load()
}
