package multiregion

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
)

// homeHashDomain separates the home hash from any other use of SHA-256 over
// the same strings. Changing it re-homes every key: it is part of the
// on-disk contract, like the record format.
const homeHashDomain = "idemkey/multiregion/home/v1\x00"

// HomeOrder returns regions ordered by preference for (scope, key) by
// rendezvous (highest-random-weight) hashing: each region's weight is the
// first 8 bytes, big-endian, of
//
//	SHA-256("idemkey/multiregion/home/v1\x00" || len(scope) || ":" || scope || len(key) || ":" || key || region)
//
// (lengths in decimal), and regions are sorted by weight, highest first;
// equal weights, which SHA-256 makes practically impossible, fall back to
// the names' order. The first region is the key's home; the others are its
// failover order.
//
// The order depends only on (scope, key) and the set of region names, not
// on their order in regions, the process or the time. Adding a region moves
// only the keys that the new region wins (about 1/n of them) and leaves the
// relative order of the old regions unchanged; removing one moves only its
// own keys. Processes that disagree on the set home some keys differently:
// a HomeRegion Store therefore checks its regions and pins against the
// table's topology record (TopologyRecord), and a change goes through
// AdvanceTopology. HomeOrder returns a new slice and does not modify
// regions.
func HomeOrder(scope, key string, regions []string) []string {
	type weighted struct {
		name   string
		weight uint64
	}
	ws := make([]weighted, len(regions))
	prefix := homeHashDomain + strconv.Itoa(len(scope)) + ":" + scope + strconv.Itoa(len(key)) + ":" + key
	for i, r := range regions {
		sum := sha256.Sum256([]byte(prefix + r))
		ws[i] = weighted{name: r, weight: binary.BigEndian.Uint64(sum[:8])}
	}
	slices.SortFunc(ws, func(a, b weighted) int {
		switch {
		case a.weight > b.weight:
			return -1
		case a.weight < b.weight:
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.name
	}
	return out
}

// pinnedOrder returns HomeOrder with pin moved to the front; the others
// keep their relative order.
func pinnedOrder(scope, key, pin string, regions []string) []string {
	order := HomeOrder(scope, key, regions)
	i := slices.Index(order, pin)
	if i <= 0 {
		return order
	}
	copy(order[1:i+1], order[:i])
	order[0] = pin
	return order
}
