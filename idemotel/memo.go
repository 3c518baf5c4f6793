package idemotel

import (
	"sync"
	"sync/atomic"
)

// memo maps a few keys, each computed once, to values read without a lock
// or an allocation: readers load an immutable map, a miss copies it with
// the new entry. For the attribute sets of a bounded set of keys.
type memo[K comparable, V any] struct {
	mu sync.Mutex
	m  atomic.Pointer[map[K]V]
}

// get returns the value of k, computing it on the first call.
func (c *memo[K, V]) get(k K, compute func() V) V {
	if m := c.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil {
		if v, ok := (*old)[k]; ok {
			return v
		}
	}
	v := compute()
	m := map[K]V{k: v}
	if old != nil {
		for ok, ov := range *old {
			m[ok] = ov
		}
	}
	c.m.Store(&m)
	return v
}
