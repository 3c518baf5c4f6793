package dynamostore

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"slices"
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

// The attributes of a key table on the default KeySchema.
const (
	// TTLAttribute is the record's expiry attribute, a Number of epoch
	// seconds, on which EnsureTable enables TTL.
	TTLAttribute = keyschema.DefaultTTLAttribute
	// PartitionKey is the table's only key attribute, a String.
	PartitionKey = keyschema.DefaultPartitionKey
)

// Attribute names of a key record (see the package doc).
const (
	attrVersion  = "v"
	attrMethod   = "m"
	attrPath     = "p"
	attrFP       = "f"
	attrState    = "s"
	attrLock     = "l"
	attrLockExp  = "e"
	attrStatus   = "r"
	attrHeader   = "h"
	attrBody     = "b"
	attrEnc      = "z"
	attrOmitted  = "o"
	attrCreated  = "c"
	attrDone     = "d"
	attrRegion   = "g"
	recordFormat = "2"
)

// The stored values of the two states, and the method a record omits.
const (
	storedInProgress = "p"
	storedCompleted  = "c"
	defaultMethod    = "POST"
)

// MaxScopeBytes and MaxKeyBytes bound the two halves of a record's
// partition key; together they stay under DynamoDB's 2048-byte limit.
const (
	MaxScopeBytes = 1024
	MaxKeyBytes   = 512
	// FingerprintSize is the length of a request fingerprint (SHA-256).
	FingerprintSize = 32
	// StoredFingerprintSize is the length of the part of a fingerprint a
	// record stores: its first 16 bytes. Two requests with one key pass
	// for the same one with a chance of 2^-128, SHA-256's collision bound.
	StoredFingerprintSize = 16
	// LockTokenSize is the length in bytes of a claim's random lock
	// token; Record.LockToken holds it in unpadded base64url (11
	// characters).
	LockTokenSize = 8
)

// Request is what a claim is about.
type Request struct {
	// Scope separates callers (a tenant, an API key id). The same Key in two
	// scopes names two unrelated records. It may be empty (one shared scope).
	Scope string
	// Key is the client's idempotency key. It must not be empty.
	Key string
	// Method and Path record, for operators, what the key was first used
	// for (at most MaxMethodBytes and MaxPathBytes); bytes that are not
	// UTF-8 are stored, and returned, as U+FFFD.
	Method, Path string
	// Fingerprint identifies the request's content: FingerprintSize bytes
	// (a SHA-256 digest), or a Record's StoredFingerprintSize bytes. A
	// later request with the key and another fingerprint is a mismatch.
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
	// Fingerprint is the part of the request's fingerprint the record
	// stores: its first StoredFingerprintSize bytes. Compare a request's
	// fingerprint with it by MatchesFingerprint.
	Fingerprint []byte
	State       State
	// Response is set for completed records.
	Response *Response
	// LockToken is the claim's owner token, LockTokenSize random bytes in
	// unpadded base64url, kept once completed so that a repeated commit or
	// claim knows its own record.
	LockToken string
	// LockExpires is when an in-progress record may be reclaimed. A
	// completed record read back holds it only on a table with the expiry
	// index (Options.ExpiryIndex); it is zero otherwise.
	LockExpires time.Time
	Created     time.Time
	// Completed is when the record was completed (zero when in progress).
	Completed time.Time
	// Expires is the record's exp, a whole second: the record is absent
	// once now.Unix() > Expires.Unix(), except in progress under a live
	// lock. An in-progress record's is never before its LockExpires.
	Expires time.Time
	// Region is the region that wrote the record, when the store names one.
	Region string

	commit *commitMemo // shared by the copies of an acquired claim's record
	body   *bodyRef    // the response body in the BodyStore, when it is there
}

// commitMemo remembers the completion time of a claim's first commit
// attempt, so that a repeat encodes the same item.
type commitMemo struct {
	mu sync.Mutex
	at time.Time
}

// completion returns the time of the first attempt (now for the first, or
// for a nil memo: a claim built by hand).
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

// MatchesFingerprint reports whether fp, a request's fingerprint
// (FingerprintSize bytes, or the StoredFingerprintSize bytes of a Record's
// Fingerprint), is the one r was written for: whether the first
// StoredFingerprintSize bytes of both are equal. It takes a time that does
// not depend on their contents.
func (r *Record) MatchesFingerprint(fp []byte) bool {
	if len(fp) < StoredFingerprintSize || len(r.Fingerprint) < StoredFingerprintSize {
		return false
	}
	return subtle.ConstantTimeCompare(r.Fingerprint[:StoredFingerprintSize], fp[:StoredFingerprintSize]) == 1
}

// storedFingerprint returns the part of fp that a record stores.
func storedFingerprint(fp []byte) []byte {
	return bytes.Clone(fp[:min(len(fp), StoredFingerprintSize)])
}

// liveAt reports whether the record stands at now, as the claim and
// eviction conditions say: exp not passed, or in progress under a live lock.
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

// baseItem encodes the attributes of both states (a completed record's
// lock expiry only with the expiry index, which projects it). Its values
// are allocated together: an item is built on every request.
func (l *layout) baseItem(r *Record) map[string]types.AttributeValue {
	strs := make([]types.AttributeValueMemberS, 6)
	nums := make([]types.AttributeValueMemberN, 4)
	bins := make([]types.AttributeValueMemberB, 1)
	item := make(map[string]types.AttributeValue, 16)
	str := func(i int, name, v string) { strs[i].Value = v; item[name] = &strs[i] }
	num := func(i int, name string, v int64) { nums[i].Value = strconv.FormatInt(v, 10); item[name] = &nums[i] }
	str(0, l.PartitionKey, l.Value(r.Scope, r.Key))
	if l.SortKey != "" {
		str(1, l.SortKey, l.SortKeyValue)
	}
	if marked(l.Schema) {
		item[keyschema.Marker] = markerValue
	}
	if r.Method != defaultMethod {
		str(2, attrMethod, r.Method)
	}
	str(3, attrPath, r.Path)
	item[attrState] = stateValue(r.State)
	item[attrLock] = lockValue(r.LockToken)
	if l.indexed {
		str(4, ExpiryBucketAttribute, ExpiryBucket(KeySchema(l.Schema), strs[0].Value))
	}
	nums[0].Value = recordFormat
	item[attrVersion] = &nums[0]
	if r.State == StateInProgress || l.indexed {
		num(1, attrLockExp, r.LockExpires.UnixMilli())
	}
	num(2, attrCreated, r.Created.UnixMilli())
	num(3, l.TTLAttribute, r.Expires.Unix())
	bins[0].Value = r.Fingerprint[:min(len(r.Fingerprint), StoredFingerprintSize)]
	item[attrFP] = &bins[0]
	if r.Region != "" {
		str(5, attrRegion, r.Region)
	}
	return item
}

// The state values of conditions and items; the SDK only reads them.
var (
	inProgressValue types.AttributeValue = &types.AttributeValueMemberS{Value: storedInProgress}
	completedValue  types.AttributeValue = &types.AttributeValueMemberS{Value: storedCompleted}
)

// stateValue returns the stored value of a state (a State of neither
// kind, which no Store writes, as it is).
func stateValue(st State) types.AttributeValue {
	switch st {
	case StateInProgress:
		return inProgressValue
	case StateCompleted:
		return completedValue
	}
	return attrS(string(st))
}

// newLockToken returns a fresh random lock token: LockTokenSize bytes in
// unpadded base64url.
func newLockToken() string {
	var b [LockTokenSize]byte
	_, _ = rand.Read(b[:])
	return lockEncoding.EncodeToString(b[:])
}

var lockEncoding = base64.RawURLEncoding.Strict()

// lockValue returns a lock token's stored form: the bytes it encodes, or
// the token as a String when it is not canonical base64url (a claim built
// by hand). Equal tokens give equal values.
func lockValue(token string) types.AttributeValue {
	if b, err := lockEncoding.DecodeString(token); err == nil && len(b) > 0 && lockEncoding.EncodeToString(b) == token {
		return &types.AttributeValueMemberB{Value: b}
	}
	return &types.AttributeValueMemberS{Value: token}
}

// getLock reads the lock token of item, the inverse of lockValue.
func getLock(item map[string]types.AttributeValue) (string, error) {
	switch v := item[attrLock].(type) {
	case *types.AttributeValueMemberB:
		if len(v.Value) == 0 {
			return "", &RecordError{Attr: attrLock, Reason: "empty lock token"}
		}
		return lockEncoding.EncodeToString(v.Value), nil
	case *types.AttributeValueMemberS:
		return v.Value, nil
	case nil:
		return "", &RecordError{Attr: attrLock, Reason: "missing"}
	}
	return "", &RecordError{Attr: attrLock, Reason: "wrong type"}
}

// getState reads the state of item.
func getState(item map[string]types.AttributeValue) (State, error) {
	v, err := getS(item, attrState)
	switch {
	case err != nil:
		return "", err
	case v == storedInProgress:
		return StateInProgress, nil
	case v == storedCompleted:
		return StateCompleted, nil
	}
	return "", &RecordError{Attr: attrState, Reason: "unknown state"}
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
	// The completion time, as milliseconds after the claim's: a few
	// digits where an epoch time takes thirteen.
	item[attrDone] = attrN(r.Completed.UnixMilli() - r.Created.UnixMilli())
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

// commonHeaders are the header lines a header block names by their
// index, one byte each: its entry i+1 is commonHeaders[i]. The list is part
// of the record format: an entry may be appended only with a new version.
var commonHeaders = [...][2]string{
	{"Content-Type", "application/json"},
	{"Content-Type", "application/json; charset=utf-8"},
	{"Content-Type", "application/problem+json"},
	{"Content-Type", "text/plain; charset=utf-8"},
	{"Content-Type", "text/html; charset=utf-8"},
	{"Content-Type", "application/grpc"},
	{"Content-Type", "application/octet-stream"},
	{"X-Content-Type-Options", "nosniff"},
	{"Cache-Control", "no-store"},
	{"Content-Encoding", "gzip"},
}

// commonHeader returns the entry byte of a common header line, 0 if it is
// not one.
func commonHeader(name, value string) byte {
	for i, c := range commonHeaders {
		if c[0] == name && c[1] == value {
			return byte(i + 1)
		}
	}
	return 0
}

// encodeHeader encodes the stored headers of h as one header block, nil
// when none is stored. The block is a sequence of lines, names in
// increasing order and each name's values in their order: a line is one
// byte, the index of a common header line (see commonHeaders), or a zero
// byte followed by the name and the value, each as a uvarint length and
// its bytes.
func encodeHeader(h http.Header) types.AttributeValue {
	names := make([]string, 0, len(h))
	for name, values := range h {
		if storedHeader(name) && len(values) > 0 {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	var block []byte
	for _, name := range names {
		for _, v := range h[name] {
			if c := commonHeader(name, v); c != 0 {
				block = append(block, c)
				continue
			}
			block = append(block, 0)
			block = binary.AppendUvarint(block, uint64(len(name)))
			block = append(block, name...)
			block = binary.AppendUvarint(block, uint64(len(v)))
			block = append(block, v...)
		}
	}
	return &types.AttributeValueMemberB{Value: block}
}

// decodeHeader decodes a header block (see encodeHeader).
func decodeHeader(block []byte) (http.Header, error) {
	bad := func(reason string) error { return &RecordError{Attr: attrHeader, Reason: reason} }
	h := http.Header{}
	field := func() (string, error) {
		n, w := binary.Uvarint(block)
		if w <= 0 || n > uint64(len(block)-w) {
			return "", bad("truncated header line")
		}
		f := string(block[w : w+int(n)])
		block = block[w+int(n):]
		return f, nil
	}
	for len(block) > 0 {
		c := block[0]
		block = block[1:]
		if c != 0 {
			if int(c) > len(commonHeaders) {
				return nil, bad("unknown common header line")
			}
			line := commonHeaders[c-1]
			h[line[0]] = append(h[line[0]], line[1])
			continue
		}
		name, err := field()
		if err != nil {
			return nil, err
		}
		value, err := field()
		if err != nil {
			return nil, err
		}
		h[name] = append(h[name], value)
	}
	if len(h) == 0 {
		return nil, bad("empty header block")
	}
	return h, nil
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

// decode decodes and validates an item; anything else than a record of
// the layout is a *RecordError.
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
	r.Method = defaultMethod
	if _, ok := item[attrMethod]; ok {
		if r.Method, err = getS(item, attrMethod); err != nil {
			return nil, err
		}
	}
	if r.Path, err = getS(item, attrPath); err != nil {
		return nil, err
	}
	if r.Fingerprint, err = getB(item, attrFP); err != nil {
		return nil, err
	}
	if len(r.Fingerprint) != StoredFingerprintSize {
		return nil, &RecordError{Attr: attrFP, Reason: "fingerprint is not 16 bytes"}
	}
	if r.State, err = getState(item); err != nil {
		return nil, err
	}
	if r.LockToken, err = getLock(item); err != nil {
		return nil, err
	}
	if _, ok := item[attrLockExp]; ok || r.State == StateInProgress {
		lockExp, err := getN(item, attrLockExp)
		if err != nil {
			return nil, err
		}
		r.LockExpires = time.UnixMilli(lockExp)
	}
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
	if r.State == StateInProgress {
		return &r, nil
	}
	done, err := getN(item, attrDone)
	if err != nil {
		return nil, err
	}
	r.Completed = time.UnixMilli(created + done)
	resp, err := decodeResponse(item)
	if err != nil {
		return nil, err
	}
	r.Response = resp
	if r.body, err = decodeBodyRef(item); err != nil {
		return nil, err
	}
	return &r, nil
}

// The bounds of a stored response, for the decoder and checkResponse alike.
const (
	minStatus, maxStatus = 100, 999
	maxOmittedBody       = 1 << 40
)

// checkResponse refuses a response a record could not be read back with.
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
// for a record in progress its lock expiry before now's millisecond. A claim
// overwrites such an item whatever the rest of it holds, so a read treats
// it as absent without decoding the rest. Unreadable expiry attributes
// report false, for the decoder to name them.
func (l *layout) pastItem(item map[string]types.AttributeValue, now time.Time) bool {
	exp, err := getN(item, l.TTLAttribute)
	if err != nil || exp >= now.Unix() {
		return false
	}
	state, err := getState(item)
	if err != nil {
		return false
	}
	if state != StateInProgress {
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
	if _, ok := item[attrHeader]; ok {
		block, err := getB(item, attrHeader)
		if err != nil {
			return nil, err
		}
		if resp.Header, err = decodeHeader(block); err != nil {
			return nil, err
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
