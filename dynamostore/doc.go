// Package dynamostore stores idempotency key records in Amazon DynamoDB.
//
// It owns the record format and every DynamoDB expression about a key
// record: the conditional PutItem that claims a key, the fenced writes that
// complete or release it, and the table's creation. Nobody else writes a
// condition on a key record.
//
// # The record
//
// One table with a single string partition key, pk. A record is one item:
//
//	pk        S  length-prefixed (scope, key): "<len(scope)>:<scope><key>"
//	v         N  record format version (1)
//	method    S  HTTP method (or operation name) the key was first used for
//	path      S  path (or event source) the key was first used for
//	fp        B  32-byte request fingerprint
//	state     S  "in_progress" or "completed"
//	lock      S  random owner token of the claim; fences late writers
//	lock_exp  N  epoch milliseconds after which another request may reclaim
//	status    N  stored response status (completed records)
//	hdr       M  stored response headers, name → list of values
//	body      B  stored response body, gzip-compressed when enc = "gzip"
//	enc       S  body encoding ("gzip"), absent when stored as is
//	omitted   N  size of a response body too large to store (body absent)
//	created   N  epoch milliseconds of the claim
//	done      N  epoch milliseconds of the completion
//	exp       N  epoch SECONDS: the table's TTL attribute
//	exp_bucket S the expiry index's partition key: a shard of pk, "07"
//	             (ExpiryBucket), whatever the state
//
// That is the default KeySchema, for a table of key records only. On a
// table shared with the application's items (Options.Schema), pk and exp
// are the table's own attribute names, the partition key value is
// "<Prefix>#<len(scope)>:<scope><key>", the sort key (if the table has
// one) is a constant, and the record also carries
//
//	idemkey   S  record format version ("1"): the marker of a key record
//
// Every delete the sweeper sends on such a table is conditioned on the
// prefix and the marker, and a claim overwrites only an item with the
// marker, so the application's items are never touched (see KeySchema).
//
// A record whose exp lies in the past is absent for every read and every
// condition of this package, whether or not DynamoDB's TTL process has
// deleted it yet (that can take days). A claim sets exp to the end of its
// lock plus the retention (see Options.Retention), and its commit keeps
// it, so an in-progress record's exp is always after the end of its lock:
// neither a claim, nor the sweeper, nor TTL takes a live lock; and an
// in-progress record under a live lock stands for every condition of this
// package even past its exp (as records of older versions could be).
//
// # DynamoDB calls per outcome
//
// Claim costs one PutItem. On real DynamoDB a losing claim learns the
// stored record from the same call (ReturnValuesOnConditionCheckFailure);
// an implementation that omits the item costs one extra consistent GetItem.
// Complete costs one PutItem, Commit one TransactWriteItems (one PutItem
// when nothing was staged), CommitFirst (the one-round-trip protocol) one
// of the same, Release one DeleteItem.
//
// # Sweeping
//
// DynamoDB's TTL process deletes expired records late (often days) and
// without a trace. Sweeper evicts them on a schedule you control and says
// what it did: a parallel Scan (Segment/TotalSegments) reading only pk,
// exp, state, lock, lock_exp and created, in bounded pages under a rate
// limit and a time budget. An expired record is deleted under the
// condition exp < now and not in progress under a live lock (a key
// re-claimed since survives and counts as skipped); a stuck in-progress
// record whose lock expired is deleted under
// the condition that the same claim still holds it with its lock expired
// (the reclaim of a dead owner's key). A pass stopped by its budget returns
// a cursor, which Sweep takes back, or which Resume keeps in the table
// under a reserved key that no key record has.
// Cost: one Scan per page, one DeleteItem per removed record.
//
// A Scan reads the whole table, so its cost grows with the live records.
// In SweepIndex mode (SweepOptions.Mode) the sweeper reads instead a
// global secondary index, ExpiryIndexName, that EnsureExpiryIndex adds
// to the table: keyed by exp_bucket and sorted by exp, it holds every
// record in one of 32 shards, so that the expired records are read
// without the live ones. A run then costs read units in proportion to the
// expired records plus 64 small queries, and the index costs two write
// units per request over a record's life, one at the claim and one at
// the eviction (see EnsureExpiryIndex). Stuck records are read there once
// their exp passed, not as soon as their lock expired (see SweepMode).
//
// This package is not an HTTP middleware and makes no decision about what
// to send a client: see the idemkey package for the protocol and the
// handler and lambda packages for the front doors.
//
// The public surface: Store (New, EnsureTable, EnsureSchemaTable,
// EnsureTableWithoutTTL) with its Options and KeySchema, the record types (Request, Response, Record, Claim), the
// Sweeper (NewSweeper, Sweep, Resume) with SweepOptions, SweepMode and
// SweepReport, the expiry index (EnsureExpiryIndex, ExpiryBucket), the
// limits and attribute names, and the errors.
package dynamostore
