package dynamostore

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/internal/keyschema"
)

// State is the lifecycle state of a live record.
type State string

const (
	// StateInProgress: the key is claimed and its request is executing.
	StateInProgress State = "in_progress"
	// StateCompleted: the request finished and its response is stored.
	StateCompleted State = "completed"
)

// The attributes of a key table on the default KeySchema, which its users
// and templates name.
const (
	// TTLAttribute is the record's expiry attribute on the default
	// KeySchema, a Number of epoch seconds. EnsureTable enables DynamoDB
	// TTL on it; deploy templates must name the same attribute.
	TTLAttribute = keyschema.DefaultTTLAttribute
	// PartitionKey is the table's only key attribute on the default
	// KeySchema, a String.
	PartitionKey = keyschema.DefaultPartitionKey
)

// Attribute names of a key record; the key and TTL attributes are the
// schema's.
const (
	attrVersion  = "v"
	attrMethod   = "method"
	attrPath     = "path"
	attrFP       = "fp"
	attrState    = "state"
	attrLock     = "lock"
	attrLockExp  = "lock_exp"
	attrStatus   = "status"
	attrHeader   = "hdr"
	attrBody     = "body"
	attrEnc      = "enc"
	attrOmitted  = "omitted"
	attrCreated  = "created"
	attrDone     = "done"
	attrRegion   = "region"
	recordFormat = "1"
)

// MaxScopeBytes and MaxKeyBytes bound the two halves of a record's
// partition key; together they stay under DynamoDB's 2048-byte limit.
const (
	MaxScopeBytes = 1024
	MaxKeyBytes   = 512
	// FingerprintSize is the length of a request fingerprint (SHA-256).
	FingerprintSize = 32
)

// Request is what a claim is about.
type Request struct {
	// Scope separates callers (a tenant, an API key id). The same Key in two
	// scopes names two unrelated records. It may be empty (one shared scope).
	Scope string
	// Key is the client's idempotency key. It must not be empty.
	Key string
	// Method and Path record what the key was first used for. They are
	// stored for operators; the fingerprint is what is compared. They hold
	// at most MaxMethodBytes and MaxPathBytes bytes. DynamoDB strings are
	// UTF-8: bytes that are not are stored as U+FFFD, and the Record a
	// claim returns holds them so.
	Method, Path string
	// Fingerprint identifies the request's content (32 bytes). A later
	// request with the same key and another fingerprint is a mismatch.
	Fingerprint []byte
	// Lease overrides the store's lock lease for this claim when positive.
	Lease time.Duration
}

// Response is a stored response.
type Response struct {
	Status int
	Header http.Header
	// Body is the response body, nil when it was omitted.
	Body []byte
	// BodyOmitted is the size in bytes of a body that was too large to
	// store: larger than 64 MiB, or over DynamoDB's 400 KB item limit even
	// compressed. Body is then nil. Zero when the body was stored.
	BodyOmitted int
}

// Record is a decoded key record.
type Record struct {
	Scope, Key   string
	Method, Path string
	Fingerprint  []byte
	State        State
	// Response is set for completed records.
	Response *Response
	// LockToken is the owner token of the claim that created the record.
	LockToken string
	// LockExpires is when an in-progress record may be reclaimed.
	LockExpires time.Time
	Created     time.Time
	// Completed is when the record was completed (zero when in progress).
	Completed time.Time
	// Expires is the record's exp, a whole second: the record is absent
	// from the second after it on (once now.Unix() > Expires.Unix()),
	// except an in-progress record whose lock has not expired. An
	// in-progress record's Expires is never before its LockExpires
	// rounded up to the second.
	Expires time.Time
	// Region is the region that wrote the record, when the store names one.
	Region string

	// commit is shared by the copies of an acquired claim's record: it
	// remembers the completion time of the claim's first commit attempt.
	commit *commitMemo
}

// commitMemo remembers the completion time of a claim's first commit
// attempt, so that a repeat encodes the same item (see Store.Commit).
type commitMemo struct {
	mu sync.Mutex
	at time.Time
}

// completion returns the completion time of the commit of the claim that
// holds m: the time of its first attempt, now for the first one. A nil
// memo (a claim built by hand) gives now.
func (m *commitMemo) completion(now time.Time) time.Time {
	if m == nil {
		return now
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.at.IsZero() {
		m.at = now
	}
	return m.at
}

// liveAt reports whether the record stands at now for every read and
// condition of this package: its exp second has not passed, or it is in
// progress under a lock that has not expired (a record written before exp
// covered its lock, kept until its owner may be dead). The claim condition
// and the sweeper's eviction condition say the same in DynamoDB's terms.
func (r *Record) liveAt(now time.Time) bool {
	if r.Expires.Unix() >= now.Unix() {
		return true
	}
	return r.State == StateInProgress && r.LockExpires.UnixMilli() >= now.UnixMilli()
}

// wholeSecond returns t truncated to its epoch second, as exp stores it.
func wholeSecond(t time.Time) time.Time { return time.Unix(t.Unix(), 0) }

// ceilSecond returns t rounded up to an epoch second.
func ceilSecond(t time.Time) time.Time {
	s := wholeSecond(t)
	if s.Before(t) {
		s = s.Add(time.Second)
	}
	return s
}

func attrS(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func attrN(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
func attrB(b []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: b} }

// baseItem encodes the attributes shared by both states. Its values are
// allocated together: an item is built on every request.
func (l *layout) baseItem(r *Record) map[string]types.AttributeValue {
	strs := make([]types.AttributeValueMemberS, 8)
	nums := make([]types.AttributeValueMemberN, 4)
	item := make(map[string]types.AttributeValue, 19)
	str := func(i int, name, v string) { strs[i].Value = v; item[name] = &strs[i] }
	num := func(i int, name string, v int64) { nums[i].Value = strconv.FormatInt(v, 10); item[name] = &nums[i] }
	str(0, l.PartitionKey, l.Value(r.Scope, r.Key))
	if l.SortKey != "" {
		str(6, l.SortKey, l.SortKeyValue)
	}
	if marked(l.Schema) {
		item[keyschema.Marker] = markerValue
	}
	str(1, attrMethod, r.Method)
	str(2, attrPath, r.Path)
	str(3, attrState, string(r.State))
	str(4, attrLock, r.LockToken)
	str(7, ExpiryBucketAttribute, ExpiryBucket(KeySchema(l.Schema), strs[0].Value))
	nums[0].Value = recordFormat
	item[attrVersion] = &nums[0]
	num(1, attrLockExp, r.LockExpires.UnixMilli())
	num(2, attrCreated, r.Created.UnixMilli())
	num(3, l.TTLAttribute, r.Expires.Unix())
	item[attrFP] = &types.AttributeValueMemberB{Value: r.Fingerprint}
	if r.Region != "" {
		str(5, attrRegion, r.Region)
	}
	return item
}

// maxItemBytes is DynamoDB's item size limit (400 KB).
const maxItemBytes = 400 * 1024

// encodeCompleted encodes a completed record. The body is gzip-compressed
// when larger than compressAbove and smaller that way; a body larger than
// maxStoredBody, or one with which the item would still exceed limit
// bytes, is left out (and then the headers, if the item still exceeds
// limit) and the record says so.
func (l *layout) encodeCompleted(r *Record, compressAbove, limit int) map[string]types.AttributeValue {
	item := l.baseItem(r)
	resp := r.Response
	item[attrStatus] = attrN(int64(resp.Status))
	item[attrDone] = attrN(r.Completed.UnixMilli())
	if hdr := encodeHeader(resp.Header); hdr != nil {
		item[attrHeader] = hdr
	}
	omitted := resp.BodyOmitted
	if n := len(resp.Body); n > maxStoredBody {
		// The decoder refuses to inflate past maxStoredBody: store the
		// body as omitted rather than a record that can never replay.
		omitted = n
	} else if n > 0 {
		body, enc := resp.Body, ""
		if len(body) > compressAbove {
			if z := gzipBytes(body); len(z) < len(body) {
				body, enc = z, "gzip"
			}
		}
		item[attrBody] = attrB(body)
		if enc != "" {
			item[attrEnc] = attrS(enc)
		}
	}
	if omitted > 0 {
		item[attrOmitted] = attrN(int64(omitted))
	}
	if itemSize(item) <= limit {
		return item
	}
	if _, ok := item[attrBody]; ok {
		delete(item, attrBody)
		delete(item, attrEnc)
		item[attrOmitted] = attrN(int64(len(resp.Body)))
	}
	if itemSize(item) > limit {
		delete(item, attrHeader)
	}
	return item
}

// unstoredHeaders are never stored with a response: hop-by-hop headers
// (RFC 9110 §7.6.1), per-response ones (Date, Content-Length), and
// Set-Cookie, which must not be handed to whoever retries.
var unstoredHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Proxy-Connection": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Set-Cookie": true, "Date": true, "Content-Length": true,
}

// storedHeader reports whether a response header of this name is stored
// and replayed. Hop-by-hop headers, Set-Cookie, Date and Content-Length are
// not.
func storedHeader(name string) bool {
	// A name that is not valid UTF-8 is no header net/http sends, and the
	// SDK would store it as another name.
	return utf8.ValidString(name) && !unstoredHeaders[http.CanonicalHeaderKey(name)]
}

func encodeHeader(h http.Header) types.AttributeValue {
	if len(h) == 0 {
		return nil
	}
	m := make(map[string]types.AttributeValue, len(h))
	for name, values := range h {
		if !storedHeader(name) || len(values) == 0 {
			continue
		}
		l := make([]types.AttributeValue, len(values))
		for i, v := range values {
			if utf8.ValidString(v) {
				l[i] = attrS(v)
			} else {
				// DynamoDB strings are UTF-8 (the SDK would replace the
				// invalid bytes): keep the value's bytes as a binary.
				l[i] = attrB([]byte(v))
			}
		}
		m[name] = &types.AttributeValueMemberL{Value: l}
	}
	if len(m) == 0 {
		return nil
	}
	return &types.AttributeValueMemberM{Value: m}
}

var gzipPool = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed); return w }}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	w := gzipPool.Get().(*gzip.Writer)
	w.Reset(&buf)
	_, _ = w.Write(b)
	_ = w.Close()
	gzipPool.Put(w)
	return buf.Bytes()
}

// maxStoredBody bounds the size of a stored body, decompressed: the
// decoder refuses an item that inflates past it (a corrupted or hostile
// item cannot expand without limit), so the encoder stores a larger body
// as omitted, however well it compresses.
const maxStoredBody = 64 << 20

func gunzipBytes(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(r, maxStoredBody+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxStoredBody {
		return nil, io.ErrShortBuffer
	}
	return out, nil
}

// itemSize estimates an item's size by DynamoDB's rules, rounding up.
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return len(v.Value) + 1
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	default:
		return 1
	}
}

// decode decodes and validates an item. It never panics; anything that is
// not a well-formed record of this package in the layout is a
// *RecordError.
func (l *layout) decode(item map[string]types.AttributeValue) (*Record, error) {
	var r Record
	pk, err := getS(item, l.PartitionKey)
	if err != nil {
		return nil, err
	}
	var ok bool
	if r.Scope, r.Key, ok = l.Parse(pk); !ok || r.Key == "" {
		return nil, &RecordError{Attr: l.PartitionKey, Reason: "not a (scope, key) encoding"}
	}
	if _, ok := l.InNamespace(item); !ok {
		return nil, &RecordError{Attr: l.SortKey, Reason: "not the key records' sort key"}
	}
	if marked(l.Schema) {
		if m, err := getS(item, keyschema.Marker); err != nil || m != recordFormat {
			return nil, &RecordError{Attr: keyschema.Marker, Reason: "not a key record"}
		}
	}
	if v, err := getN(item, attrVersion); err != nil || strconv.FormatInt(v, 10) != recordFormat {
		return nil, &RecordError{Attr: attrVersion, Reason: "unknown record format"}
	}
	if r.Method, err = getS(item, attrMethod); err != nil {
		return nil, err
	}
	if r.Path, err = getS(item, attrPath); err != nil {
		return nil, err
	}
	if r.Fingerprint, err = getB(item, attrFP); err != nil {
		return nil, err
	}
	if len(r.Fingerprint) != FingerprintSize {
		return nil, &RecordError{Attr: attrFP, Reason: "fingerprint is not 32 bytes"}
	}
	state, err := getS(item, attrState)
	if err != nil {
		return nil, err
	}
	r.State = State(state)
	if r.LockToken, err = getS(item, attrLock); err != nil {
		return nil, err
	}
	lockExp, err := getN(item, attrLockExp)
	if err != nil {
		return nil, err
	}
	r.LockExpires = time.UnixMilli(lockExp)
	created, err := getN(item, attrCreated)
	if err != nil {
		return nil, err
	}
	r.Created = time.UnixMilli(created)
	exp, err := getN(item, l.TTLAttribute)
	if err != nil {
		return nil, err
	}
	r.Expires = time.Unix(exp, 0)
	if _, present := item[attrRegion]; present {
		if r.Region, err = getS(item, attrRegion); err != nil {
			return nil, err
		}
	}
	switch r.State {
	case StateInProgress:
		return &r, nil
	case StateCompleted:
	default:
		return nil, &RecordError{Attr: attrState, Reason: "unknown state"}
	}
	done, err := getN(item, attrDone)
	if err != nil {
		return nil, err
	}
	r.Completed = time.UnixMilli(done)
	resp, err := decodeResponse(item)
	if err != nil {
		return nil, err
	}
	r.Response = resp
	return &r, nil
}

// The bounds the decoder holds a stored response to, and checkResponse a
// response before it is stored: a record is never written that its reader
// would refuse.
const (
	minStatus, maxStatus = 100, 999
	maxOmittedBody       = 1 << 40
)

// checkResponse refuses a response a completed record could not be read
// back with: its status outside 100 to 999, or a BodyOmitted below zero or
// above 1 TiB.
func checkResponse(resp Response) error {
	if resp.Status < minStatus || resp.Status > maxStatus {
		return fmt.Errorf("%w: response status %d is not an HTTP status (%d to %d)", ErrInvalidRequest, resp.Status, minStatus, maxStatus)
	}
	if resp.BodyOmitted < 0 || resp.BodyOmitted > maxOmittedBody {
		return fmt.Errorf("%w: BodyOmitted %d is not a body size", ErrInvalidRequest, resp.BodyOmitted)
	}
	return nil
}

// pastItem reports whether item's expiry attributes, read alone, say that
// the record is no longer live (see liveAt): exp before now's second, and
// for a record in progress its lock_exp before now's millisecond. A claim
// overwrites such an item whatever the rest of it holds, so a read treats
// it as absent without decoding the rest. Unreadable expiry attributes
// report false, for the decoder to name them.
func (l *layout) pastItem(item map[string]types.AttributeValue, now time.Time) bool {
	exp, err := getN(item, l.TTLAttribute)
	if err != nil || exp >= now.Unix() {
		return false
	}
	state, err := getS(item, attrState)
	if err != nil {
		return false
	}
	if state != string(StateInProgress) {
		return true
	}
	lockExp, err := getN(item, attrLockExp)
	return err == nil && lockExp < now.UnixMilli()
}

func decodeResponse(item map[string]types.AttributeValue) (*Response, error) {
	status, err := getN(item, attrStatus)
	if err != nil {
		return nil, err
	}
	if status < minStatus || status > maxStatus {
		return nil, &RecordError{Attr: attrStatus, Reason: "not an HTTP status"}
	}
	resp := &Response{Status: int(status)}
	if v, ok := item[attrHeader]; ok {
		m, ok := v.(*types.AttributeValueMemberM)
		if !ok {
			return nil, &RecordError{Attr: attrHeader, Reason: "not a map"}
		}
		resp.Header = make(http.Header, len(m.Value))
		for name, lv := range m.Value {
			l, ok := lv.(*types.AttributeValueMemberL)
			if !ok {
				return nil, &RecordError{Attr: attrHeader, Reason: "header " + strconv.Quote(name) + " is not a list"}
			}
			values := make([]string, len(l.Value))
			for i, e := range l.Value {
				switch v := e.(type) {
				case *types.AttributeValueMemberS:
					values[i] = v.Value
				case *types.AttributeValueMemberB:
					values[i] = string(v.Value)
				default:
					return nil, &RecordError{Attr: attrHeader, Reason: "header value is neither a string nor a binary"}
				}
			}
			resp.Header[name] = values
		}
	}
	if _, ok := item[attrBody]; ok {
		body, err := getB(item, attrBody)
		if err != nil {
			return nil, err
		}
		enc := ""
		if _, ok := item[attrEnc]; ok {
			if enc, err = getS(item, attrEnc); err != nil {
				return nil, err
			}
		}
		switch enc {
		case "":
		case "gzip":
			if body, err = gunzipBytes(body); err != nil {
				return nil, &RecordError{Attr: attrBody, Reason: "bad gzip body: " + err.Error()}
			}
		default:
			return nil, &RecordError{Attr: attrEnc, Reason: "unknown body encoding"}
		}
		resp.Body = body
	}
	if _, ok := item[attrOmitted]; ok {
		n, err := getN(item, attrOmitted)
		if err != nil {
			return nil, err
		}
		if n <= 0 || n > maxOmittedBody {
			return nil, &RecordError{Attr: attrOmitted, Reason: "not a body size"}
		}
		resp.BodyOmitted = int(n)
	}
	return resp, nil
}

func getS(item map[string]types.AttributeValue, name string) (string, error) {
	switch v := item[name].(type) {
	case *types.AttributeValueMemberS:
		return v.Value, nil
	case nil:
		return "", &RecordError{Attr: name, Reason: "missing"}
	}
	return "", &RecordError{Attr: name, Reason: "wrong type"}
}

func getB(item map[string]types.AttributeValue, name string) ([]byte, error) {
	switch v := item[name].(type) {
	case *types.AttributeValueMemberB:
		return v.Value, nil
	case nil:
		return nil, &RecordError{Attr: name, Reason: "missing"}
	}
	return nil, &RecordError{Attr: name, Reason: "wrong type"}
}

func getN(item map[string]types.AttributeValue, name string) (int64, error) {
	switch v := item[name].(type) {
	case *types.AttributeValueMemberN:
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			return 0, &RecordError{Attr: name, Reason: "not an integer"}
		}
		return n, nil
	case nil:
		return 0, &RecordError{Attr: name, Reason: "missing"}
	}
	return 0, &RecordError{Attr: name, Reason: "wrong type"}
}
