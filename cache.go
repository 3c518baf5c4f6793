package idemkey

import (
	"bytes"
	"container/list"
	"reflect"
	"sync"
	"time"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/fingerprint"
	"github.com/idemkey/idemkey/internal/keyschema"
)

// Cache keeps completed records in process memory so that a replay costs
// no DynamoDB call. It is bounded (least recently used entries go first),
// holds only completed records, and never serves one past the earlier of
// its own TTL and the record's expiry: it stops at the first instant a
// claim could take the key again, the second after the record's exp
// (Record.Expires, a whole second), on the Guard's clock. Every hit
// compares the request's fingerprint, so a key reused for another request
// still gets ErrMismatch.
//
// A cache is per process: a retry that reaches another process reads
// DynamoDB as usual. A record deleted by hand (an operator's forced
// release of a completed key) may still be replayed by a cache for up to
// its TTL; keep the TTL short where that matters. It is safe for
// concurrent use.
//
// A cache serves one store, as its entries are named by scope and key
// alone: New refuses a Cache that a Guard over another store uses. It
// keeps its own copies of what it stores, and every hit returns a copy of
// the response, so that neither the function's buffers nor a caller's
// changes to a replayed response reach another replay. A response whose
// body is larger than a DynamoDB item (400 KB: one a store keeps in a
// body store, dynamostore.Options.Bodies) is not cached, so that the
// cache's memory stays within maxEntries items.
type Cache struct {
	mu      sync.Mutex
	max     int
	ttl     time.Duration
	order   *list.List // front: most recently used
	entries map[string]*list.Element
	owner   Store // the store of the Guards it serves, once one uses it
}

type cacheEntry struct {
	pk      string
	fp      []byte
	resp    Response
	expires time.Time
}

// NewCache returns a cache of at most maxEntries records, each kept at most
// ttl. It panics if maxEntries or ttl is not positive.
func NewCache(maxEntries int, ttl time.Duration) *Cache {
	if maxEntries <= 0 || ttl <= 0 {
		panic("idemkey: NewCache needs a positive size and TTL")
	}
	return &Cache{max: maxEntries, ttl: ttl, order: list.New(), entries: make(map[string]*list.Element)}
}

// Len returns the number of entries, expired ones included until they are
// looked up or pushed out.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// lookup returns the cached response of (scope, key) at now: hit reports
// an entry, mismatch that its fingerprint differs from fp.
func (c *Cache) lookup(scope, key string, fp []byte, now time.Time) (resp Response, hit, mismatch bool) {
	pk := keyschema.PartitionKey(scope, key)
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[pk]
	if !ok {
		return Response{}, false, false
	}
	e := el.Value.(*cacheEntry)
	if !now.Before(e.expires) {
		c.order.Remove(el)
		delete(c.entries, pk)
		return Response{}, false, false
	}
	c.order.MoveToFront(el)
	// The entry holds a record's fingerprint: the part a record stores.
	if len(fp) < dynamostore.StoredFingerprintSize || !fingerprint.Equal(e.fp, fp[:dynamostore.StoredFingerprintSize]) {
		return Response{}, true, true
	}
	return copyResponse(e.resp), true, false
}

// copyResponse returns resp with its own header map and body.
func copyResponse(resp Response) Response {
	resp.Header = resp.Header.Clone()
	resp.Body = bytes.Clone(resp.Body)
	return resp
}

// bind makes store the cache's store, and reports whether it is: false
// when a Guard over another store uses it already.
func (c *Cache) bind(store Store) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owner == nil {
		c.owner = store
		return true
	}
	return sameStore(c.owner, store)
}

// sameStore reports whether a and b are one store: equal values of a
// comparable type (a pointer, for *dynamostore.Store).
func sameStore(a, b Store) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Type() == vb.Type() && va.Comparable() && a == b
}

// maxCachedBody is the largest body the cache keeps: a DynamoDB item's.
const maxCachedBody = 400 * 1024

// store keeps a completed record.
func (c *Cache) store(rec *dynamostore.Record, now time.Time) {
	if rec == nil || rec.State != dynamostore.StateCompleted || rec.Response == nil || len(rec.Response.Body) > maxCachedBody {
		return
	}
	expires := now.Add(c.ttl)
	// The record is live through its exp second: a claim can take the key
	// from the next second on (exp < now in epoch seconds).
	if claimable := time.Unix(rec.Expires.Unix()+1, 0); claimable.Before(expires) {
		expires = claimable
	}
	if !now.Before(expires) {
		return
	}
	pk := keyschema.PartitionKey(rec.Scope, rec.Key)
	e := &cacheEntry{pk: pk, fp: bytes.Clone(rec.Fingerprint), resp: copyResponse(*rec.Response), expires: expires}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[pk]; ok {
		el.Value = e
		c.order.MoveToFront(el)
		return
	}
	c.entries[pk] = c.order.PushFront(e)
	for c.order.Len() > c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*cacheEntry).pk)
	}
}
