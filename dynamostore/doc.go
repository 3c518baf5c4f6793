// Package dynamostore stores idempotency key records in Amazon DynamoDB.
//
// It owns the record format and every DynamoDB expression about a key
// record: the conditional PutItem that claims a key, the fenced writes that
// complete or release it, and the table's creation. Nobody else writes a
// condition on a key record.
//
// # The record
//
// One table with a single string partition key, pk. A record is one item,
// its attribute names one letter each so that the record costs little
// beside the response it stores:
//
//	pk        S  length-prefixed (scope, key): "<len(scope)>:<scope><key>"
//	v         N  record format version (2)
//	m         S  the method the key was first used for, absent when POST
//	p         S  the path (or operation) the key was first used for
//	f         B  the first 16 bytes of the request's SHA-256 fingerprint
//	s         S  the state: "p" in progress, "c" completed
//	l         B  the claim's random lock token (8 bytes); fences late
//	             writers, and tells a commit or claim retried after a lost
//	             answer its own completed record from another claim's
//	e         N  epoch milliseconds after which another request may
//	             reclaim; in progress only, but kept once completed on a
//	             table with the expiry index (Options.ExpiryIndex), which
//	             projects it
//	c         N  epoch milliseconds of the claim
//	d         N  milliseconds from the claim to the completion (completed)
//	r         N  stored response status (completed)
//	h         B  stored response headers, one block, absent when none (see
//	             below)
//	b         B  stored response body, gzip-compressed when z = "gzip"
//	z         S  body encoding ("gzip"), absent when stored as is
//	o         N  size of a response body too large to store (b absent)
//	g         S  the region that wrote the record (Options.Region), if any
//	exp       N  epoch SECONDS: the table's TTL attribute
//	exp_bucket S the expiry index's partition key: a shard of pk, "07"
//	             (ExpiryBucket), whatever the state; only with
//	             Options.ExpiryIndex
//
// The header block is a sequence of header lines, names in increasing
// byte order and each name's values in their order. A line is one byte:
// the number (1 to 10) of a common line, in this order: Content-Type
// application/json, application/json; charset=utf-8,
// application/problem+json, text/plain; charset=utf-8, text/html;
// charset=utf-8, application/grpc, application/octet-stream;
// X-Content-Type-Options nosniff; Cache-Control no-store;
// Content-Encoding gzip. Or it is a zero byte followed by the name and
// the value, each as its length (an unsigned varint) and its bytes. A
// JSON response's Content-Type takes 2 bytes with the attribute's name.
//
// A completed record of a 16-character key with a 200-byte JSON response
// takes about 296 bytes (BENCHMARKS.md): a response up to about 900 bytes
// fits the 1 KB of one write unit.
//
// That is the default KeySchema, for a table of key records only. On a
// table shared with the application's items (Options.Schema), pk and exp
// are the table's own attribute names, the partition key value is
// "<Prefix>#<len(scope)>:<scope><key>", the sort key (if the table has
// one) is a constant, and the record also carries
//
//	idemkey   S  record format version ("2"): the marker of a key record
//
// Every delete the sweeper sends on such a table is conditioned on the
// prefix and the marker, and a claim overwrites only an item with the
// marker, so the application's items are never touched (see KeySchema).
//
// A record whose exp lies in the past is absent for every read and
// condition of this package, whether or not TTL has deleted it yet. A
// claim sets exp to the end of its lock plus the retention (see
// Options.Retention), and its commit keeps it; and an in-progress record
// under a live lock stands for every condition even past its exp. So
// neither a claim, nor the sweeper, nor TTL takes a live lock.
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
// without a trace. Sweeper evicts them on a schedule you control and
// reports what it did, deleting each expired or stuck record with a
// conditional DeleteItem that spares a record claimed again since. It
// reads the table with a parallel Scan (SweepScan) or reads the expiry
// index (SweepIndex, see SweepMode), in bounded pages under a rate limit
// and a time budget; a pass stopped by its budget returns a cursor, which
// Sweep takes back or Resume keeps in the table.
//
// This package is not an HTTP middleware and makes no decision about what
// to send a client: see the idemkey package for the protocol and the
// handler and lambda packages for the front doors.
package dynamostore
