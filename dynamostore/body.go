package dynamostore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// BodyStore keeps the bodies of large responses outside the key table
// (Options.Bodies). Package s3body implements it over Amazon S3. A Store
// names every object itself, one per record, and checks what it reads
// back: the BodyStore only moves bytes.
type BodyStore interface {
	// PutBody writes body under key. It returns only once the body is
	// durably stored: the record that points at it is written after.
	PutBody(ctx context.Context, key string, body []byte) error
	// GetBody opens the body stored under key. An absent object is an
	// error matching fs.ErrNotExist.
	GetBody(ctx context.Context, key string) (io.ReadCloser, error)
	// DeleteBody deletes the object under key; an absent one is no error.
	DeleteBody(ctx context.Context, key string) error
}

// Defaults and bounds of the body options.
const (
	// DefaultBodyAbove is the default Options.BodyAbove: 64 KiB.
	DefaultBodyAbove = 64 << 10
	// MaxBodyBytes is the default and the maximum of Options.MaxBodyBytes:
	// 64 MiB, the bound of a body stored in the record.
	MaxBodyBytes = maxStoredBody
)

// ErrReplayCorrupt reports a completed record whose body, kept in the
// BodyStore, is missing, or is not the body the record was committed with
// (its size or SHA-256 differs, or it is larger than Options.MaxBodyBytes).
// The response is never replayed: not with another body, not without one.
// It matches ErrCorruptRecord too.
var ErrReplayCorrupt = fmt.Errorf("%w: response body missing or not the committed one", ErrCorruptRecord)

// attrBodyRef is the attribute of a record whose body is in the BodyStore:
// a Binary of a format byte, the body's SHA-256 and its size as a uvarint.
// The object's key is derived from the record (see bodyKey), so a record
// names only its own object.
const (
	attrBodyRef   = "x"
	bodyRefFormat = 1
)

// bodyRef is a decoded attrBodyRef.
type bodyRef struct {
	sum  [sha256.Size]byte
	size int64
}

func (b bodyRef) encode() types.AttributeValue {
	v := append([]byte{bodyRefFormat}, b.sum[:]...)
	return attrB(binary.AppendUvarint(v, uint64(b.size)))
}

func decodeBodyRef(item map[string]types.AttributeValue) (*bodyRef, error) {
	if _, ok := item[attrBodyRef]; !ok {
		return nil, nil
	}
	v, err := getB(item, attrBodyRef)
	if err != nil {
		return nil, err
	}
	if len(v) < 1+sha256.Size+1 || v[0] != bodyRefFormat {
		return nil, &RecordError{Attr: attrBodyRef, Reason: "unknown body reference format"}
	}
	ref := &bodyRef{}
	copy(ref.sum[:], v[1:])
	n, w := binary.Uvarint(v[1+sha256.Size:])
	if w <= 0 || 1+sha256.Size+w != len(v) || n == 0 || n > maxStoredBody {
		return nil, &RecordError{Attr: attrBodyRef, Reason: "not a body size"}
	}
	ref.size = int64(n)
	return ref, nil
}

// bodyKey is the object key of the body with SHA-256 sum of the record of
// (scope, key) with lock token lock (random per claim): derived from the
// record's partition and sort key values and its token, so no two records,
// of one tenant or two, share an object.
func (l *layout) bodyKey(scope, key, lock string, sum [sha256.Size]byte) string {
	h := sha256.Sum256([]byte("idemkey/body\x00" + l.Value(scope, key) + "\x00" + l.SortKeyValue + "\x00" + lock))
	return hex.EncodeToString(h[:16]) + "/" + hex.EncodeToString(sum[:])
}

// evictedBody returns the object key of the body of a deleted record's
// old item, "" when it has none in the BodyStore.
func (l *layout) evictedBody(old map[string]types.AttributeValue) string {
	ref, err := decodeBodyRef(old)
	if ref == nil || err != nil {
		return ""
	}
	pk, _ := getS(old, l.PartitionKey)
	scope, key, ok := l.Parse(pk)
	lock, err := getLock(old)
	if !ok || err != nil {
		return ""
	}
	return l.bodyKey(scope, key, lock, ref.sum)
}

// putBody moves the body of the completed record rec out of item into the
// BodyStore when the store has one and the body is larger than BodyAbove
// (or was left out of item for its size), and at most MaxBodyBytes: it
// writes the object, then points item at it. It returns the reference and
// the object's key (nil and "" when the body stays as encoded).
func (s *Store) putBody(ctx context.Context, rec *Record, item map[string]types.AttributeValue) (*bodyRef, string, error) {
	body := rec.Response.Body
	_, inline := item[attrBody]
	if s.opts.Bodies == nil || len(body) == 0 || len(body) > s.opts.MaxBodyBytes || (inline && len(body) <= s.opts.BodyAbove) {
		return nil, "", nil
	}
	ref := &bodyRef{sum: sha256.Sum256(body), size: int64(len(body))}
	key := s.layout.bodyKey(rec.Scope, rec.Key, rec.LockToken, ref.sum)
	if err := s.opts.Bodies.PutBody(ctx, key, body); err != nil {
		return nil, "", &StoreError{Op: "PutBody", Err: err, LockToken: rec.LockToken}
	}
	ref.point(item, rec, s.opts.MaxItemBytes)
	return ref, key, nil
}

// point makes item, the encoding of rec, refer to the body in the
// BodyStore in place of holding it (a nil ref leaves item as it is).
func (ref *bodyRef) point(item map[string]types.AttributeValue, rec *Record, limit int) {
	if ref == nil {
		return
	}
	delete(item, attrBody)
	delete(item, attrEnc)
	delete(item, attrOmitted)
	item[attrBodyRef] = ref.encode()
	if _, ok := item[attrHeader]; !ok {
		if hdr := encodeHeader(rec.Response.Header); hdr != nil {
			item[attrHeader] = hdr
			if itemSize(item) > limit {
				delete(item, attrHeader)
			}
		}
	}
}

// dropBody deletes the object key of a write that did not happen. Its
// failure is left to the bucket's lifecycle rule.
func (s *Store) dropBody(ctx context.Context, key string) {
	if key != "" {
		_ = s.opts.Bodies.DeleteBody(context.WithoutCancel(ctx), key)
	}
}

// readBody fills in the body of a completed record kept in the BodyStore,
// read whole and checked (size, then SHA-256) before the record is
// returned: the caller answers with it or with an error, never with a part.
func (s *Store) readBody(ctx context.Context, rec *Record) (*Record, error) {
	ref := rec.body
	if ref == nil || rec.Response == nil || rec.Response.Body != nil {
		return rec, nil
	}
	if s.opts.Bodies == nil {
		return nil, fmt.Errorf("%w: the record's body is in a body store and this Store has none (Options.Bodies)", ErrReplayCorrupt)
	}
	if ref.size > int64(s.opts.MaxBodyBytes) {
		return nil, fmt.Errorf("%w: the record declares a body of %d bytes, over MaxBodyBytes (%d)", ErrReplayCorrupt, ref.size, s.opts.MaxBodyBytes)
	}
	rc, err := s.opts.Bodies.GetBody(ctx, s.layout.bodyKey(rec.Scope, rec.Key, rec.LockToken, ref.sum))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: the body object is missing", ErrReplayCorrupt)
	}
	if err != nil {
		return nil, &StoreError{Op: "GetBody", Err: err}
	}
	defer rc.Close()
	var buf bytes.Buffer
	buf.Grow(int(ref.size))
	if _, err := buf.ReadFrom(io.LimitReader(rc, ref.size+1)); err != nil {
		return nil, &StoreError{Op: "GetBody", Err: err}
	}
	sum := sha256.Sum256(buf.Bytes())
	if int64(buf.Len()) != ref.size || subtle.ConstantTimeCompare(sum[:], ref.sum[:]) != 1 {
		return nil, fmt.Errorf("%w: the body object is not the committed body (size or SHA-256 differs)", ErrReplayCorrupt)
	}
	out := *rec
	resp := *rec.Response
	resp.Body = buf.Bytes()
	out.Response = &resp
	return &out, nil
}

// replayBody fills in the body of the record of a claim that answers with
// it (Replay).
func (s *Store) replayBody(ctx context.Context, c *Claim, err error) (*Claim, error) {
	if err != nil || c.Result != Replay {
		return c, err
	}
	rec, err := s.readBody(ctx, c.Record)
	if err != nil {
		return nil, err
	}
	return &Claim{Result: Replay, Record: rec}, nil
}

// checkBodyOptions sets the defaults of the body options and panics on
// values that would break a replay. Without Bodies they have no effect.
func checkBodyOptions(o *Options) {
	if o.BodyAbove == 0 {
		o.BodyAbove = min(DefaultBodyAbove, o.MaxItemBytes/2)
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = MaxBodyBytes
	}
	switch {
	case o.Bodies == nil:
	case o.BodyAbove < 0 || o.BodyAbove >= o.MaxItemBytes:
		panic(fmt.Sprintf("dynamostore: New: BodyAbove %d is not between 0 and MaxItemBytes (%d): a body that does not go to Bodies must fit the item; lower BodyAbove", o.BodyAbove, o.MaxItemBytes))
	case o.MaxBodyBytes < 0 || o.MaxBodyBytes > MaxBodyBytes:
		panic(fmt.Sprintf("dynamostore: New: MaxBodyBytes %d is not between 1 and %d (MaxBodyBytes)", o.MaxBodyBytes, MaxBodyBytes))
	}
}

// dropBody deletes the object of the record a sweep evicted, whose old
// item DynamoDB returned, and counts it; a failure counts as an error of
// the sweep (the lifecycle rule removes the object later).
func (r *sweepRun) dropBody(ctx context.Context, t *sweepTally, pk string, old map[string]types.AttributeValue) {
	key := r.s.layout.evictedBody(old)
	if key == "" {
		return
	}
	if err := r.s.opts.Bodies.DeleteBody(ctx, key); err != nil {
		t.fail(&StoreError{Op: "DeleteBody", Err: err}, fmt.Sprintf("DeleteBody (key %s): %v", sweepKeyHash(pk), err))
		return
	}
	t.bodies++
}
