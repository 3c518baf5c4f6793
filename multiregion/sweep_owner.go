package multiregion

import (
	"context"
	"strconv"
)

// SweepOwner returns the hook (dynamostore.SweepOptions.Owns) with which
// region's sweeper deletes exactly the key records that region may
// delete under the table's topology record, read and refreshed as Claim
// reads it (see CheckTopology):
//
//   - a failover record, by the region that wrote it (its only writer);
//     when no topology of the record lists that region any longer (it
//     was removed), by the key's home;
//   - a key's home record, by the key's home, whichever region wrote it:
//     a record written in its old home before a change of pins or
//     regions is deleted by its new home, never from the old home's
//     replica, whose delete could be the later write and erase the new
//     home's record.
//
// While the record changes, a key whose two topologies home it in
// different regions is deleted by nobody: its records are orphans (the
// sweep counts them as Unowned and, once expired, as eviction lag) until
// the change is finished. A record of no region, one whose topology
// cannot be read, and one the Store's configuration contradicts are left
// alone as well. Set it with Region:
//
//	owns, err := store.SweepOwner("eu-west-1")
//	sweeper := dynamostore.NewSweeper(euWest1, table, func(o *dynamostore.SweepOptions) {
//		o.Region, o.Owns = "eu-west-1", owns
//	})
//
// HomeRegion mode only, and region must be one of the Store's; otherwise
// a *ConfigError.
func (s *Store) SweepOwner(region string) (func(ctx context.Context, scope, key, writer string) (mine, orphan bool), error) {
	switch {
	case s.opts.Mode != HomeRegion:
		return nil, &ConfigError{Mode: s.opts.Mode, Field: "Mode", Reason: "sweep ownership follows the topology record of HomeRegion mode", Err: ErrInvalidConfig}
	case s.byName[region] == nil:
		return nil, &ConfigError{Mode: s.opts.Mode, Field: "region", Reason: "unknown region " + strconv.Quote(region), Err: ErrInvalidConfig}
	}
	return func(ctx context.Context, stored, key, writer string) (bool, bool) {
		rec, err := s.topology(ctx)
		if err != nil {
			return false, false // undecided: left to a later sweep
		}
		ts := []Topology{s.configured()}
		if rec != nil {
			ts = []Topology{rec.Active}
			if rec.Consulted != nil {
				ts = append(ts, *rec.Consulted)
			}
		}
		return sweepOwner(ts, region, stored, key, writer)
	}, nil
}

// sweepOwner decides whether region's sweep may delete the record of
// (stored, key) written by writer under the topologies ts (one, or the
// two of a change), and, when not, whether no region may.
func sweepOwner(ts []Topology, region, stored, key, writer string) (mine, orphan bool) {
	if writer == "" {
		return false, true
	}
	scope, from, failover := splitFailoverScope(stored)
	if failover {
		if from != writer {
			return false, true // not a record this package writes: nobody's
		}
		for _, t := range ts {
			for _, name := range t.Regions {
				if name == from {
					return from == region, false
				}
			}
		}
	}
	home := ""
	for _, t := range ts {
		h := t.Home(scope, key)
		if home != "" && h != home {
			return false, true // two homes during a change: nobody's until it is finished
		}
		home = h
	}
	return home == region, false
}
