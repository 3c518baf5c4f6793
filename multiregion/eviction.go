package multiregion

// homeEvictionError refuses TTL eviction in HomeRegion mode: a replica's
// replicated TTL delete can win over the home's newer write (see package doc).
func homeEvictionError(o *Options) error {
	if o.Eviction != EvictByTTL {
		return nil
	}
	return &ConfigError{Mode: o.Mode, Field: "Eviction", Err: ErrTTLReplicated,
		Reason: "on an MREC global table a TTL deletion in one replica is replicated to all and can win over a newer write of the key " +
			"in its home region (last writer wins), erasing a live record; turn TTL off (dynamostore.EnsureTableWithoutTTL, idemctl create-table -no-ttl), " +
			"run in each region a sweeper with dynamostore.SweepOptions.Region set to that region, and set Eviction to EvictBySweeper"}
}
