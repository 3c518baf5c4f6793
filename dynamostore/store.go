package dynamostore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/internal/keyschema"
	"github.com/idemkey/idemkey/internal/txnwrite"
	"github.com/idemkey/idemkey/txn"
)

// Client is the set of DynamoDB calls a Store makes. *dynamodb.Client
// satisfies it; tests wrap it to count calls or inject faults.
type Client interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var _ Client = (*dynamodb.Client)(nil)

// Defaults of Options.
const (
	// DefaultRetention is how long a record lives after its last write:
	// 24 hours, the floor for payment-style operations. Seven days
	// suits clients whose queues can pause over a weekend.
	DefaultRetention = 24 * time.Hour
	// DefaultLease is how long a claim's lock holds before another request
	// may reclaim the key: 5 minutes. It must exceed the longest handler
	// duration, downstream timeouts included.
	DefaultLease = 5 * time.Minute
	// DefaultCompressAbove is the body size above which a stored body is
	// gzip-compressed.
	DefaultCompressAbove = 1024
)

// Options configure a Store. The zero value of each field selects its
// default.
type Options struct {
	// Retention is how long a record stays after its completion (default
	// DefaultRetention); a retry after that executes again, so it must
	// outlast the client's slowest retry path. A claim sets exp to the end
	// of its lock plus Retention, rounded up to the second; a commit keeps
	// it when it is at least the completion time plus Retention (always
	// within the lock) and otherwise sets that, truncated to the second,
	// as CommitFirst does. A record thus stays at least Retention after
	// its completion and at most the lease longer. New panics if Retention
	// is shorter than Lease.
	Retention time.Duration
	// Lease is the default lock lease of a claim (default DefaultLease), at
	// most Retention. Too short a lease lets a live request's key be
	// reclaimed: its commit then fails with ErrLockLost and writes no
	// staged effect, but effects outside DynamoDB run twice.
	Lease time.Duration
	// CompressAbove is the body size above which stored bodies are
	// gzip-compressed (default DefaultCompressAbove; negative: never).
	CompressAbove int
	// MaxItemBytes is the item size budget of a completed record (default
	// and maximum: DynamoDB's 400 KB). A record that would exceed it is
	// stored without its body, then without its headers; the replay says
	// so (Response.BodyOmitted).
	MaxItemBytes int
	// Now is the clock (default time.Now). Tests inject one.
	Now func() time.Time
	// Region, when set, is written on every record this store writes.
	Region string
	// Txn tunes the retries of transaction conflicts on Commit.
	Txn txn.Options
	// ExpiryIndex says that the table has the expiry index
	// (EnsureExpiryIndex) and is swept in SweepIndex mode: records then
	// carry ExpiryBucketAttribute and, once completed, their claim's lock
	// expiry (21 bytes), so that a commit leaves the index entry as it is.
	// Every Store writing a table swept by index must set it: a Sweeper
	// finds the others' records only by a scan (see SweepMode).
	ExpiryIndex bool
	// Schema is where records live in the table (default: the dedicated
	// key table's layout; see KeySchema). Every store, sweeper and tool
	// over one table must use the same schema.
	Schema KeySchema
	// Bodies, when set, keeps response bodies larger than BodyAbove (and
	// any body that would not fit the item) outside the table, one object
	// per record, written before the commit; a replay reads it back and
	// checks its size and SHA-256 (ErrReplayCorrupt when it is missing or
	// differs). Bodies over MaxBodyBytes are stored as omitted. The
	// Sweeper of the table must have the same BodyStore
	// (SweepOptions.Bodies) to delete the objects of the records it
	// evicts. See docs/large-responses.md.
	Bodies BodyStore
	// BodyAbove is the body size above which a body goes to Bodies
	// (default DefaultBodyAbove, or half of MaxItemBytes when that is
	// less). With Bodies, New panics if it is negative or not below
	// MaxItemBytes, or if MaxBodyBytes is negative or over MaxBodyBytes.
	BodyAbove int
	// MaxBodyBytes bounds the body a record keeps in Bodies, for the
	// writer and the reader alike (default and maximum MaxBodyBytes).
	MaxBodyBytes int
}

// Store reads and writes key records in one DynamoDB table. It is safe for
// concurrent use.
type Store struct {
	client Client
	table  string
	opts   Options
	layout *layout
}

// New returns a Store over table. It panics, a configuration error, if
// client is nil, table is empty, Retention or Lease is negative, the
// effective Retention is shorter than the effective Lease, Region is longer
// than MaxSweepRegionLen or not valid UTF-8, or Schema is invalid
// (KeySchema.Validate).
func New(client Client, table string, optFns ...func(*Options)) *Store {
	if client == nil || table == "" {
		panic("dynamostore: New needs a client and a table name")
	}
	s := &Store{client: client, table: table}
	for _, fn := range optFns {
		fn(&s.opts)
	}
	o := &s.opts
	if o.Retention < 0 || o.Lease < 0 {
		panic(fmt.Sprintf("dynamostore: New: negative Retention (%v) or Lease (%v): zero selects the default (DefaultRetention, DefaultLease); "+
			"a negative duration is a mistake, not a default", o.Retention, o.Lease))
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Retention < o.Lease {
		panic(fmt.Sprintf("dynamostore: New: Retention %v is shorter than Lease %v: a key must be kept at least as long as its lock holds, "+
			"and a retry after the retention executes again; raise Retention or lower Lease", o.Retention, o.Lease))
	}
	if len(o.Region) > MaxSweepRegionLen {
		panic(fmt.Sprintf("dynamostore: New: Region of %d bytes, more than %d (MaxSweepRegionLen): no Sweeper of that region could evict its records",
			len(o.Region), MaxSweepRegionLen))
	}
	if !utf8.ValidString(o.Region) {
		panic(fmt.Sprintf("dynamostore: New: Region %q is not valid UTF-8: DynamoDB would store another string, which no Sweeper of that region matches", o.Region))
	}
	if o.CompressAbove == 0 {
		o.CompressAbove = DefaultCompressAbove
	} else if o.CompressAbove < 0 {
		o.CompressAbove = int(^uint(0) >> 1)
	}
	if o.MaxItemBytes <= 0 || o.MaxItemBytes > maxItemBytes {
		o.MaxItemBytes = maxItemBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	checkBodyOptions(o)
	s.layout = newLayout(mustSchema("dynamostore: New", o.Schema))
	s.layout.indexed = o.ExpiryIndex
	o.Schema = KeySchema(s.layout.Schema)
	return s
}

// Table returns the table name.
func (s *Store) Table() string { return s.table }

// Options returns the store's effective options.
func (s *Store) Options() Options { return s.opts }

// Client returns the client the store calls DynamoDB through, as New
// received it.
func (s *Store) Client() Client { return s.client }

// ClaimResult is what a claim found: the key is the caller's (Acquired),
// or another request's record answers it (Replay, InFlight, Mismatch).
// The outcome of a whole request is idemkey.Outcome.
type ClaimResult int

const (
	// Acquired: the caller owns the key and must execute, then Commit or
	// Release.
	Acquired ClaimResult = iota + 1
	// Replay: the key completed with the same fingerprint; the stored
	// response answers the request.
	Replay
	// InFlight: another request holds the key's lock.
	InFlight
	// Mismatch: the key was used for a request with another fingerprint.
	Mismatch
)

func (o ClaimResult) String() string {
	switch o {
	case Acquired:
		return "acquired"
	case Replay:
		return "replay"
	case InFlight:
		return "in_flight"
	case Mismatch:
		return "mismatch"
	}
	return "ClaimResult(" + strconv.Itoa(int(o)) + ")"
}

// Claim is the result of Store.Claim.
type Claim struct {
	// Result says what the claim found.
	Result ClaimResult
	// Record is the record this claim wrote (Acquired), or the stored
	// record that decided the outcome (Replay, InFlight, Mismatch).
	Record *Record
}

// claimAttempts bounds the loop of a claim that keeps finding no live
// record after losing its condition.
const claimAttempts = 3

// Claim tries to take the key of req with one conditional PutItem, which
// succeeds when no live record exists: none, an expired one, or one in
// progress whose lock expired. Otherwise the stored record decides:
// Mismatch when its fingerprint differs, InFlight when in progress, Replay
// when completed; a record of an earlier attempt of this claim (an SDK
// retry) counts as Acquired. When DynamoDB returns no item with the
// failure, Claim reads it with a consistent GetItem. Errors:
// ErrInvalidRequest, *StoreError, *RecordError, ErrClaimContention.
func (s *Store) Claim(ctx context.Context, req Request) (*Claim, error) {
	if err := validate(req); err != nil {
		return nil, err
	}
	lease := req.Lease
	if lease <= 0 {
		lease = s.opts.Lease
	}
	c, err := s.claimWith(ctx, req, nil, newLockToken(), func(now time.Time, token string) (*Record, map[string]types.AttributeValue) {
		lockExpires := now.Add(lease)
		rec := &Record{
			Scope: req.Scope, Key: req.Key, Method: asUTF8(req.Method), Path: asUTF8(req.Path),
			Fingerprint: storedFingerprint(req.Fingerprint), State: StateInProgress, LockToken: token,
			LockExpires: lockExpires, Created: now, Expires: s.inProgressExpiry(lockExpires),
			Region: s.opts.Region,
		}
		return rec, s.layout.baseItem(rec)
	})
	return s.replayBody(ctx, c, err)
}

// inProgressExpiry is the exp of a claim's record: after its lock, and no
// earlier than a commit's within the lock.
func (s *Store) inProgressExpiry(lockExpires time.Time) time.Time {
	return ceilSecond(lockExpires.Add(s.opts.Retention))
}

// commitExpiry keeps the claim's exp when it covers the retention from at
// (the index entry stays as it is), else takes at plus the retention.
func (s *Store) commitExpiry(claimed, at time.Time) time.Time {
	exp := wholeSecond(at.Add(s.opts.Retention))
	if claimed.Unix() >= exp.Unix() {
		return wholeSecond(claimed)
	}
	return exp
}

// claimWith writes the item build returns (with the staged effects of tx)
// under the claim condition, and decides the outcome when a live record
// stands in the way. token, fresh and random, identifies this call's writes.
func (s *Store) claimWith(ctx context.Context, req Request, tx *txn.Tx, token string,
	build func(now time.Time, token string) (*Record, map[string]types.AttributeValue)) (*Claim, error) {
	for range claimAttempts {
		now := s.opts.Now()
		rec, item := build(now, token)
		failed, err := s.writeFenced(ctx, item, s.layout.claimCondition, s.layout.claimNames, claimValues(now), tx, rec)
		if err == nil {
			return acquired(rec), nil
		}
		if !errors.Is(err, errFenceFailed) {
			return nil, err
		}
		old, err := s.oldRecord(ctx, req, token, failed)
		if errors.Is(err, errClaimable) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if outcome := decide(old, req, token); outcome != Acquired {
			return &Claim{Result: outcome, Record: old}, nil
		}
		return acquired(old), nil
	}
	return nil, ErrClaimContention
}

// acquired returns the claim of a record this store wrote. An in-progress
// record gets the memo that makes a repeated Commit encode the same item.
func acquired(rec *Record) *Claim {
	if rec.State == StateInProgress && rec.commit == nil {
		rec.commit = new(commitMemo)
	}
	return &Claim{Result: Acquired, Record: rec}
}

// claimCondition holds when no live record stands in the way; a record
// under a live lock always stands, even past its exp. On a schema with a
// Prefix the overwriting branches also require the marker (newLayout).
const claimCondition = "attribute_not_exists(#pk) OR (#state = :in_progress AND #lock_exp < :now_ms) OR (#exp < :now_s AND NOT (#state = :in_progress))"

func claimValues(now time.Time) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		":now_s":       attrN(now.Unix()),
		":now_ms":      attrN(now.UnixMilli()),
		":in_progress": inProgressValue,
	}
}

// errClaimable: the record that failed a claim condition is gone or
// claimable by now; the claim should be tried again.
var errClaimable = errors.New("dynamostore: claimable again")

// oldRecord returns the record that failed a claim condition: the item
// DynamoDB returned with the failure, or else a consistent read.
func (s *Store) oldRecord(ctx context.Context, req Request, token string, item map[string]types.AttributeValue) (*Record, error) {
	if item != nil {
		return s.layout.decode(item)
	}
	now := s.opts.Now()
	old, err := s.get(ctx, req.Scope, req.Key)
	if errors.Is(err, ErrNotFound) {
		return nil, errClaimable // released or evicted since
	}
	if err != nil {
		return nil, err
	}
	if old.State == StateInProgress && old.LockExpires.UnixMilli() < now.UnixMilli() && old.LockToken != token {
		return nil, errClaimable // its lock ran out since
	}
	return old, nil
}

// CommitFirst is the one-round-trip protocol: it writes the completed
// record of req with resp, and the staged effects of tx, in one call
// (PutItem, or TransactWriteItems with effects), under the claim condition.
// No claim precedes it, so the caller has already executed: use it only
// for functions whose every effect is a staged write.
//
// When a live record stands in the way, nothing is written and the returned
// Claim says what it is (Replay, InFlight, Mismatch) with the stored record;
// Acquired means this call's record and effects were committed. Errors are
// those of Commit; ErrLockLost does not occur.
func (s *Store) CommitFirst(ctx context.Context, req Request, resp Response, tx *txn.Tx) (*Claim, error) {
	if err := validate(req); err != nil {
		return nil, err
	}
	if err := checkResponse(resp); err != nil {
		return nil, err
	}
	token := newLockToken()
	record := func(now time.Time) (*Record, map[string]types.AttributeValue) {
		r := resp
		rec := &Record{
			Scope: req.Scope, Key: req.Key, Method: asUTF8(req.Method), Path: asUTF8(req.Path),
			Fingerprint: storedFingerprint(req.Fingerprint), State: StateCompleted, LockToken: token,
			LockExpires: now, Created: now, Completed: now, Expires: wholeSecond(now.Add(s.opts.Retention)),
			Region: s.opts.Region, Response: &r,
		}
		return rec, s.layout.encodeCompleted(rec, s.opts.CompressAbove, s.opts.MaxItemBytes)
	}
	var ref *bodyRef
	var object string
	if s.opts.Bodies != nil {
		rec, item := record(s.opts.Now())
		var err error
		if ref, object, err = s.putBody(ctx, rec, item); err != nil {
			return nil, err
		}
	}
	c, err := s.claimWith(ctx, req, tx, token, func(now time.Time, _ string) (*Record, map[string]types.AttributeValue) {
		rec, item := record(now)
		ref.point(item, rec, s.opts.MaxItemBytes)
		return storedView(rec, item), item
	})
	if err == nil && c.Result != Acquired || err != nil && !errors.As(err, new(*StoreError)) {
		s.dropBody(ctx, object) // nothing was written
	}
	return s.replayBody(ctx, c, err)
}

// decide classifies a live stored record against a claim; its own token
// means an earlier attempt of this call wrote it.
func decide(old *Record, req Request, token string) ClaimResult {
	switch {
	case old.LockToken == token:
		return Acquired
	case !old.MatchesFingerprint(req.Fingerprint):
		return Mismatch
	case old.State == StateInProgress:
		return InFlight
	default:
		return Replay
	}
}

func validate(req Request) error {
	switch {
	case req.Key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidRequest)
	case len(req.Key) > MaxKeyBytes:
		return fmt.Errorf("%w: key longer than %d bytes", ErrInvalidRequest, MaxKeyBytes)
	case len(req.Scope) > MaxScopeBytes:
		return fmt.Errorf("%w: scope longer than %d bytes", ErrInvalidRequest, MaxScopeBytes)
	case len(req.Method) > MaxMethodBytes:
		return fmt.Errorf("%w: method longer than %d bytes", ErrInvalidRequest, MaxMethodBytes)
	case len(req.Path) > MaxPathBytes:
		return fmt.Errorf("%w: path longer than %d bytes", ErrInvalidRequest, MaxPathBytes)
	case len(req.Fingerprint) != FingerprintSize && len(req.Fingerprint) != StoredFingerprintSize:
		return fmt.Errorf("%w: fingerprint is %d bytes, want %d (or the %d a Record holds)",
			ErrInvalidRequest, len(req.Fingerprint), FingerprintSize, StoredFingerprintSize)
	}
	return checkUTF8(req.Scope, req.Key)
}

// asUTF8 returns s as DynamoDB stores it.
func asUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// checkUTF8 refuses a scope or key that is not valid UTF-8: two such keys
// could name one record.
func checkUTF8(scope, key string) error {
	if !utf8.ValidString(scope) || !utf8.ValidString(key) {
		return fmt.Errorf("%w: scope or key is not valid UTF-8", ErrInvalidRequest)
	}
	return nil
}

// Get returns the live record of (scope, key) with a consistent read, or
// ErrNotFound (never claimed, released, or expired, deleted by TTL or not;
// a record in progress under a live lock is live whatever its exp). A scope
// or key that is not valid UTF-8 gets ErrInvalidRequest, without a call.
func (s *Store) Get(ctx context.Context, scope, key string) (*Record, error) {
	rec, err := s.get(ctx, scope, key)
	if err != nil {
		return nil, err
	}
	return s.readBody(ctx, rec)
}

func (s *Store) get(ctx context.Context, scope, key string) (*Record, error) {
	if err := checkUTF8(scope, key); err != nil {
		return nil, err
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &s.table,
		Key:            s.layout.Key(scope, key),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, &StoreError{Op: "GetItem", Err: err, Table: s.table}
	}
	now := s.opts.Now()
	if len(out.Item) == 0 || s.layout.pastItem(out.Item, now) {
		return nil, ErrNotFound
	}
	rec, err := s.layout.decode(out.Item)
	if err != nil {
		return nil, err
	}
	if !rec.liveAt(now) {
		return nil, ErrNotFound
	}
	return rec, nil
}

// fenceCondition holds while the record is still in progress under the
// claim's lock.
const fenceCondition = "#lock = :lock AND #state = :in_progress"

var fenceNames = map[string]string{"#lock": attrLock, "#state": attrState}

func fenceValues(c *Claim) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		":lock":        lockValue(c.Record.LockToken),
		":in_progress": inProgressValue,
	}
}

// Commit completes the claim's record with resp and writes the staged
// effects of tx (which may be nil or empty) atomically: one
// TransactWriteItems with the key record first, or one PutItem when there
// are no effects. The key record's write is fenced by the claim's lock
// token, so a request whose key was reclaimed under it writes nothing and
// gets ErrLockLost.
//
// Commit is safe to call again after an ambiguous failure (a *StoreError)
// with the same claim, however much later: the claim's Record (and its
// copies) keep the first call's completion time, so a repeat sends the
// same item under the same ClientRequestToken, and a repeat that finds the
// record completed under the claim's lock returns it and writes nothing.
// A repeat with another response or effects does the same when an earlier
// attempt was applied; when none was, it commits what it was given, or
// returns an error matching txn.ErrTokenMismatch if DynamoDB refuses the
// reused token (within its 10-minute window).
//
// It returns the completed record as stored.
//
// Errors: ErrInvalidRequest for a claim that was not acquired or a
// response the record could not be read back with (nothing is written);
// ErrLockLost; package txn's errors for the staged effects
// (*txn.ConditionFailedError, *txn.ConflictError, *txn.ValidationError,
// txn.ErrTooManyActions, txn.ErrTokenMismatch, ...; a *txn.ValidationError
// also, before any call, for a staged write of an item of this Store's key
// records); *StoreError when DynamoDB could not be reached or answered
// that the transaction is still in progress: the commit may or may not
// have been applied.
func (s *Store) Commit(ctx context.Context, c *Claim, resp Response, tx *txn.Tx) (*Record, error) {
	if c == nil || c.Result != Acquired || c.Record == nil {
		return nil, fmt.Errorf("%w: commit of a claim that was not acquired", ErrInvalidRequest)
	}
	if err := checkResponse(resp); err != nil {
		return nil, err
	}
	at := c.Record.commit.completion(s.opts.Now())
	done := *c.Record
	done.State = StateCompleted
	r := resp
	done.Response = &r
	done.Completed = at
	done.Expires = s.commitExpiry(c.Record.Expires, at)
	item := s.layout.encodeCompleted(&done, s.opts.CompressAbove, s.opts.MaxItemBytes)
	_, object, err := s.putBody(ctx, &done, item)
	if err != nil {
		return nil, err
	}

	failed, err := s.writeFenced(ctx, item, fenceCondition, fenceNames, fenceValues(c), tx, &done)
	switch {
	case err == nil:
		return storedView(&done, item), nil
	case errors.Is(err, errFenceFailed):
		rec, err := s.afterFenceFailed(ctx, c, failed)
		if errors.Is(err, ErrLockLost) {
			s.dropBody(ctx, object) // the record is another claim's, or gone
		}
		return rec, err
	case isTxnAnswer(err) && !errors.Is(err, txn.ErrTokenMismatch):
		s.dropBody(ctx, object) // DynamoDB refused the transaction: nothing was written
	case errors.Is(err, txn.ErrTokenMismatch):
		// An earlier attempt used this token with other parameters: if it
		// was applied, it stands.
		if cur, gerr := s.get(ctx, c.Record.Scope, c.Record.Key); gerr == nil && ownCommit(cur, c) {
			return cur, nil
		}
	}
	return nil, err
}

// ownCommit reports whether cur is completed under c's lock: the commit of
// c was applied.
func ownCommit(cur *Record, c *Claim) bool {
	return cur.State == StateCompleted && cur.LockToken == c.Record.LockToken
}

// errFenceFailed: writeFenced's condition on the key record failed; the
// item returned with the failure (nil when none) comes alongside.
var errFenceFailed = errors.New("dynamostore: fence failed")

// writeFenced writes item (rec encoded) under condition, with tx's effects
// in one transaction if any; a failed condition returns errFenceFailed and
// the item DynamoDB returned, if any.
func (s *Store) writeFenced(ctx context.Context, item map[string]types.AttributeValue, cond string,
	names map[string]string, values map[string]types.AttributeValue, tx *txn.Tx, rec *Record) (map[string]types.AttributeValue, error) {
	effects := tx.Items()
	if len(effects) == 0 {
		_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                           &s.table,
			Item:                                item,
			ConditionExpression:                 aws.String(cond),
			ExpressionAttributeNames:            names,
			ExpressionAttributeValues:           values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			return nil, nil
		}
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return nil, &StoreError{Op: "PutItem", Err: err, LockToken: rec.LockToken, Table: s.table}
		}
		return ccf.Item, errFenceFailed
	}
	if err := s.refuseKeyRecordWrites(effects); err != nil {
		return nil, err
	}
	fence := types.TransactWriteItem{Put: &types.Put{
		TableName:                           &s.table,
		Item:                                item,
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}
	err := txnwrite.Write(ctx, s.client, fence, effects, func(attempt int) string {
		return commitToken(rec, attempt)
	}, s.opts.Txn)
	if err == nil {
		return nil, nil
	}
	var fe *txnwrite.FenceError
	if errors.As(err, &fe) {
		return fe.Item, errFenceFailed
	}
	if isTxnAnswer(err) {
		return nil, err
	}
	return nil, &StoreError{Op: "TransactWriteItems", Err: err, LockToken: rec.LockToken, Table: s.table}
}

// storedView returns rec as it was stored: when the encoder left the body
// or headers out, so does the view.
func storedView(rec *Record, item map[string]types.AttributeValue) *Record {
	view := *rec
	resp := *rec.Response
	if _, ok := item[attrBody]; !ok && item[attrBodyRef] == nil && len(resp.Body) > 0 {
		resp.BodyOmitted = len(resp.Body)
		resp.Body = nil
	}
	if _, ok := item[attrHeader]; !ok {
		resp.Header = nil
	} else {
		kept := make(http.Header, len(resp.Header))
		for name, values := range resp.Header {
			if storedHeader(name) && len(values) > 0 {
				kept[name] = values
			}
		}
		resp.Header = kept
	}
	view.Response = &resp
	return &view
}

// afterFenceFailed decides a fenced write whose condition failed: if the
// record is completed under this claim's lock, an earlier attempt of the
// same commit was applied and the commit stands; otherwise the lock is lost.
func (s *Store) afterFenceFailed(ctx context.Context, c *Claim, item map[string]types.AttributeValue) (*Record, error) {
	var cur *Record
	var err error
	if item != nil {
		cur, err = s.layout.decode(item)
	} else {
		cur, err = s.get(ctx, c.Record.Scope, c.Record.Key)
	}
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, ErrLockLost
	case err != nil:
		return nil, err
	case ownCommit(cur, c):
		return cur, nil
	}
	return nil, ErrLockLost
}

// Release deletes the claim's in-progress record so that a retry executes
// again (after a 5xx, a panic, or a failed commit), fenced by the lock
// token: a record completed, reclaimed or evicted since stays and Release
// returns ErrLockLost. A delete the SDK retried that then finds the record
// gone by a consistent read had deleted it: Release returns nil.
func (s *Store) Release(ctx context.Context, c *Claim) error {
	if c == nil || c.Result != Acquired || c.Record == nil {
		return fmt.Errorf("%w: release of a claim that was not acquired", ErrInvalidRequest)
	}
	in := &dynamodb.DeleteItemInput{
		TableName:                 &s.table,
		Key:                       s.layout.Key(c.Record.Scope, c.Record.Key),
		ConditionExpression:       aws.String(fenceCondition),
		ExpressionAttributeNames:  fenceNames,
		ExpressionAttributeValues: fenceValues(c),
	}
	attempts := 0
	_, err := s.client.DeleteItem(ctx, in, countAttempts(&attempts))
	if err == nil {
		return nil
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if deleted, _ := deletedByEarlierAttempt(ctx, s.client, in, attempts); deleted {
			return nil
		}
		return ErrLockLost
	}
	return &StoreError{Op: "DeleteItem", Err: err, Table: s.table}
}

// commitToken is a transaction attempt's ClientRequestToken: the same for
// the SDK's retries and a repeated Commit of one claim (same lock token and
// completion time), different across claims and CommitFirst's attempts.
func commitToken(rec *Record, attempt int) string {
	h := sha256.New()
	h.Write([]byte("idemkey/commit/v2\x00"))
	h.Write([]byte(keyschema.PartitionKey(rec.Scope, rec.Key)))
	h.Write([]byte{0})
	h.Write([]byte(rec.LockToken))
	h.Write([]byte{0})
	h.Write([]byte(strconv.FormatInt(rec.Completed.UnixMilli(), 10)))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(attempt)))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))[:36]
}
