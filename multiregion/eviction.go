package multiregion

// homeEvictionError refuses HomeRegion mode with TTL eviction. On an MREC
// global table a TTL deletion in one replica is replicated to every other
// replica, and conflicting changes of an item are resolved by the latest
// timestamp. A replica that has not yet seen the home region's newest
// write of a key (a claim reusing the key after its retention, or the
// reclaim of an abandoned claim) still holds the old, expired version; TTL
// may delete it there at any time, and when that deletion is later than
// the home region's write, it wins everywhere and erases the newer record.
// A completed record erased that way executes again on the next retry. The
// same holds for a sweeper that deletes records in a region that did not
// write them. Eviction without that race: TTL off (see
// dynamostore.EnsureTableWithoutTTL), and in each region a sweeper that
// deletes only the records that region wrote (dynamostore.SweepOptions
// Region), declared as EvictBySweeper.
func homeEvictionError(o *Options) error {
	if o.Eviction != EvictByTTL {
		return nil
	}
	return &ConfigError{Mode: o.Mode, Field: "Eviction", Err: ErrTTLReplicated,
		Reason: "on an MREC global table a TTL deletion in one replica is replicated to all and can win over a newer write of the key " +
			"in its home region (last writer wins), erasing a live record; turn TTL off (dynamostore.EnsureTableWithoutTTL, idemctl create-table -no-ttl), " +
			"run in each region a sweeper with dynamostore.SweepOptions.Region set to that region, and set Eviction to EvictBySweeper"}
}
