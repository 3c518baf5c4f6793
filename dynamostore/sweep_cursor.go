package dynamostore

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ErrInvalidCursor reports a resume cursor that Sweep cannot use: not one
// that Sweep returned, damaged, or returned by a sweep of another table or
// of another SweepOptions.Region.
var ErrInvalidCursor = errors.New("dynamostore: invalid sweep cursor")

// ErrCursorTooLarge reports a cursor that Resume cannot keep in the table: its
// item would exceed DynamoDB's item size limit of 400 KB, counted as
// 400,000 bytes. A cursor that a
// Sweeper returns for a key table (whose key is one String attribute, at
// most 2048 bytes) always fits, whatever its segments' keys; see
// MaxSweepSegments.
var ErrCursorTooLarge = errors.New("dynamostore: sweep cursor too large for one item")

// MaxSweepRegionLen bounds SweepOptions.Region: 64 bytes (AWS region
// names are shorter than 30). A region's cursor carries its name, and its
// item's partition key does too; MaxSweepSegments counts both at this
// length.
const MaxSweepRegionLen = 64

// Sizes behind MaxSweepSegments: the saved cursor is one item, and a
// cursor holds one key per unfinished segment.
const (
	// cursorItemLimit is DynamoDB's item size limit of 400 KB counted as
	// 400,000 bytes: implementations differ on the kilobyte (moto refuses
	// items over 405,000 bytes).
	cursorItemLimit = 400_000
	// maxTableNameBytes and maxPartitionKeyBytes are DynamoDB's limits
	// on a table name and on a partition key value.
	maxTableNameBytes    = 255
	maxPartitionKeyBytes = 2048
	// maxUpdatedBytes bounds the stored size of the cursor item's
	// "updated" number (at most 20 digits and a sign).
	maxUpdatedBytes = 21
)

// maxCursorLen bounds the cursors sweepDecodeCursor reads. Cursors of
// version 1 (JSON, written before the item bound) could be longer than
// one item; it leaves them room.
const maxCursorLen = 4 << 20

// sweepCursor is the decoded form of a resume cursor: where each segment
// of an unfinished pass stands.
type sweepCursor struct {
	Version int    `json:"v"`
	Table   string `json:"table"`
	// Region is the SweepOptions.Region of the sweep that wrote the
	// cursor; "" for none (versions 1 and 2).
	Region   string           `json:"-"`
	Segments []sweepSegCursor `json:"segments"`
}

// sweepSegCursor is one segment's position: done, or the key to start
// after (nil: from the segment's beginning).
type sweepSegCursor struct {
	Done  bool                     `json:"done,omitempty"`
	After map[string]sweepKeyValue `json:"after,omitempty"`
}

// sweepKeyValue is a key attribute value: exactly one of S, N, B. Key
// attributes cannot have any other type.
type sweepKeyValue struct {
	S *string `json:"S,omitempty"`
	N *string `json:"N,omitempty"`
	B []byte  `json:"B,omitempty"`
}

// sweepCursorVersion is the version encode writes for a sweep without a
// region. Version 1 was JSON: its escapes (6 bytes for a control
// character) made the worst case six times a key's size. Version 2 is
// binary: a key costs its own bytes plus a few of framing, which bounds a
// cursor by its segment count alone. sweepDecodeCursor reads both.
const sweepCursorVersion = 2

// sweepRegionCursorVersion is the version encode writes for a sweep with a
// region: version 2 with the region after the table name. A sweep without
// a region still writes version 2, byte for byte as before.
const sweepRegionCursorVersion = 3

// newSweepCursor returns the cursor of a pass of segments segments from
// the start, for a sweep of table restricted to region ("" for none).
func newSweepCursor(table, region string, segments int) *sweepCursor {
	v := sweepCursorVersion
	if region != "" {
		v = sweepRegionCursorVersion
	}
	return &sweepCursor{Version: v, Table: table, Region: region, Segments: make([]sweepSegCursor, segments)}
}

// Framing of a version 2 cursor, before base64url (no padding):
//
//	version byte (2, or 3 for a sweep with a region)
//	uvarint length, table name
//	version 3 only: uvarint length, region (1 to MaxSweepRegionLen bytes)
//	uvarint segment count
//	per segment: a tag (segFromStart, segDone or segAfter); after
//	segAfter, a uvarint attribute count and per attribute, sorted by
//	name: uvarint length, name, a type byte ('S', 'N' or 'B'),
//	uvarint length, value.
const (
	segFromStart byte = 0
	segDone      byte = 1
	segAfter     byte = 2
)

// Worst-case sizes of a cursor of a key table: version 3 with a region of
// MaxSweepRegionLen bytes (a version 2 cursor is shorter), a table name of
// maxTableNameBytes, and each segment pending after a key "pk" of
// maxPartitionKeyBytes. A uvarint below 16384 takes 2 bytes at most, one
// below 128 one byte.
const (
	cursorHeaderBytes  = 1 + 2 + maxTableNameBytes + 1 + MaxSweepRegionLen + 2
	cursorSegmentBytes = 1 + 1 + 1 + len(PartitionKey) + 1 + 2 + maxPartitionKeyBytes
)

// sweepCursorWorstLen bounds the length of the cursor strings that a sweep
// of a key table with the given number of segments can return; the bound
// is reached from 128 segments (a smaller count takes one byte less).
func sweepCursorWorstLen(segments int) int {
	return base64.RawURLEncoding.EncodedLen(cursorHeaderBytes + segments*cursorSegmentBytes)
}

// sweepCursorItemBytes returns the size, by DynamoDB's rules, of the item
// in which Resume keeps a cursor of cursorLen bytes for
// region on the default schema, with its "updated" number at its largest.
func sweepCursorItemBytes(cursorLen int, region string) int {
	return defaultLayout.cursorItemBytes(cursorLen, region)
}

// cursorItemBytes is sweepCursorItemBytes on the layout.
func (l *layout) cursorItemBytes(cursorLen int, region string) int {
	n := 0
	for name, v := range l.cursorItemKey(region) {
		n += len(name) + valueSize(v)
	}
	return n + len(attrSweepCursor) + cursorLen + len(attrSweepUpdated) + maxUpdatedBytes
}

// maxSortKeyBytes is DynamoDB's limit on a sort key value.
const maxSortKeyBytes = 1024

// maxSweepSegments returns the most segments whose worst-case cursor (each
// segment pending after a key of the largest size the table's key schema
// allows, attribute names included) fits in the cursor item of the
// layout, with a Region of MaxSweepRegionLen bytes: MaxSweepSegments on
// the default schema, fewer on one with longer keys.
func (l *layout) maxSweepSegments() int {
	seg := 2 + keyAttrWorstBytes(l.PartitionKey, maxPartitionKeyBytes)
	if l.SortKey != "" {
		seg += keyAttrWorstBytes(l.SortKey, maxSortKeyBytes)
	}
	region := string(make([]byte, MaxSweepRegionLen))
	n := MaxSweepSegments
	for n > 1 && l.cursorItemBytes(base64.RawURLEncoding.EncodedLen(cursorHeaderBytes+n*seg), region) > cursorItemLimit {
		n--
	}
	return n
}

// keyAttrWorstBytes is the framing and value of one key attribute in a
// version 2 cursor, its value of at most maxValue bytes.
func keyAttrWorstBytes(name string, maxValue int) int {
	return len(binary.AppendUvarint(nil, uint64(len(name)))) + len(name) + 1 + len(binary.AppendUvarint(nil, uint64(maxValue))) + maxValue
}

// encode returns the cursor as an opaque string: base64url of its binary
// form, version 2 without a region, 3 with one.
func (c *sweepCursor) encode() string {
	b := []byte{sweepCursorVersion}
	if c.Region != "" {
		b[0] = sweepRegionCursorVersion
	}
	b = appendBytes(b, []byte(c.Table))
	if c.Region != "" {
		b = appendBytes(b, []byte(c.Region))
	}
	b = binary.AppendUvarint(b, uint64(len(c.Segments)))
	for _, seg := range c.Segments {
		switch {
		case seg.Done:
			b = append(b, segDone)
		case seg.After == nil:
			b = append(b, segFromStart)
		default:
			b = appendCursorKey(append(b, segAfter), seg.After)
		}
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func appendBytes(b, v []byte) []byte { return append(binary.AppendUvarint(b, uint64(len(v))), v...) }

// appendCursorKey appends a key in the binary form: a uvarint attribute
// count, then per attribute, sorted by name, its name, a type byte and its
// value.
func appendCursorKey(b []byte, key map[string]sweepKeyValue) []byte {
	b = binary.AppendUvarint(b, uint64(len(key)))
	for _, name := range slices.Sorted(maps.Keys(key)) {
		b = appendBytes(b, []byte(name))
		switch v := key[name]; {
		case v.S != nil:
			b = appendBytes(append(b, 'S'), []byte(*v.S))
		case v.N != nil:
			b = appendBytes(append(b, 'N'), []byte(*v.N))
		default:
			b = appendBytes(append(b, 'B'), v.B)
		}
	}
	return b
}

// sweepDecodeCursor decodes a cursor returned by a sweep of table
// restricted to region ("" for none): of version 1 or 2 without a region,
// 3 with one. Any other input, a cursor of another table or of another
// region included, is an error matching ErrInvalidCursor; it never panics.
// The cursor it returns has the version encode writes for it.
func sweepDecodeCursor(s, table, region string) (*sweepCursor, error) {
	raw, err := cursorBytes(s)
	if err != nil {
		return nil, err
	}
	var c *sweepCursor
	switch {
	case len(raw) > 0 && (raw[0] == sweepCursorVersion || raw[0] == sweepRegionCursorVersion):
		c, err = decodeCursorV2(raw[1:], raw[0] == sweepRegionCursorVersion)
	case len(raw) > 0 && raw[0] == '{':
		c, err = decodeCursorV1(raw)
	case len(raw) > 0 && raw[0] == sweepIndexCursorVersion:
		err = fmt.Errorf("%w: it belongs to a sweep in %s mode, this one is in %s mode", ErrInvalidCursor, SweepIndex, SweepScan)
	default:
		err = fmt.Errorf("%w: not a cursor", ErrInvalidCursor)
	}
	if err != nil {
		return nil, err
	}
	c.Version = sweepCursorVersion
	if c.Region != "" {
		c.Version = sweepRegionCursorVersion
	}
	if err := c.validate(table, region); err != nil {
		return nil, err
	}
	return c, nil
}

// cursorBytes returns the bytes of a cursor string: base64url without
// padding, at most maxCursorLen long.
func cursorBytes(s string) ([]byte, error) {
	if len(s) > maxCursorLen {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrInvalidCursor, maxCursorLen)
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64url", ErrInvalidCursor)
	}
	return raw, nil
}

// decodeCursorV1 reads the JSON form of version 1.
func decodeCursorV1(raw []byte) (*sweepCursor, error) {
	var c sweepCursor
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%w: not a cursor", ErrInvalidCursor)
	}
	if c.Version != 1 {
		return nil, fmt.Errorf("%w: unknown version %d", ErrInvalidCursor, c.Version)
	}
	for i, seg := range c.Segments {
		if seg.Done && seg.After != nil {
			return nil, fmt.Errorf("%w: segment %d both done and pending", ErrInvalidCursor, i)
		}
		if seg.After != nil && len(seg.After) == 0 {
			return nil, fmt.Errorf("%w: segment %d has an empty key", ErrInvalidCursor, i)
		}
	}
	return &c, nil
}

// cursorReader reads the binary form; its first error sticks.
type cursorReader struct {
	b   []byte
	err error
}

func (r *cursorReader) fail() {
	if r.err == nil {
		r.err = fmt.Errorf("%w: truncated or malformed", ErrInvalidCursor)
	}
}

func (r *cursorReader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.fail()
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

// uvarint reads a count that must not exceed limit.
func (r *cursorReader) uvarint(limit int) int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > uint64(limit) {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

// bytes reads a length and as many bytes.
func (r *cursorReader) bytes() []byte {
	n := r.uvarint(maxCursorLen)
	if r.err == nil && n > len(r.b) {
		r.fail()
	}
	if r.err != nil {
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// key reads a key that appendCursorKey wrote; it is empty (not nil) for
// a count of zero.
func (r *cursorReader) key() map[string]sweepKeyValue {
	attrs := r.uvarint(len(r.b)) // each takes 3 bytes at least
	key := make(map[string]sweepKeyValue, min(attrs, 4))
	for range attrs {
		name := string(r.bytes())
		kind, value := r.byte(), r.bytes()
		if _, dup := key[name]; dup {
			r.fail()
		}
		switch kind {
		case 'S':
			key[name] = sweepKeyValue{S: aws.String(string(value))}
		case 'N':
			key[name] = sweepKeyValue{N: aws.String(string(value))}
		case 'B':
			key[name] = sweepKeyValue{B: append([]byte{}, value...)}
		default:
			r.fail()
		}
	}
	return key
}

// decodeCursorV2 reads the binary form of version 2, or of version 3 when
// withRegion is set, after its version byte.
func decodeCursorV2(raw []byte, withRegion bool) (*sweepCursor, error) {
	r := &cursorReader{b: raw}
	c := &sweepCursor{Table: string(r.bytes())}
	if withRegion {
		if c.Region = string(r.bytes()); c.Region == "" || len(c.Region) > MaxSweepRegionLen {
			r.fail()
		}
	}
	n := r.uvarint(MaxSweepSegments)
	for i := 0; i < n && r.err == nil; i++ {
		var seg sweepSegCursor
		switch r.byte() {
		case segFromStart:
		case segDone:
			seg.Done = true
		case segAfter:
			if seg.After = r.key(); len(seg.After) == 0 {
				r.fail()
			}
		default:
			r.fail()
		}
		c.Segments = append(c.Segments, seg)
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail()
	}
	if r.err != nil {
		return nil, r.err
	}
	return c, nil
}

// validate checks what every version must hold.
func (c *sweepCursor) validate(table, region string) error {
	switch {
	case c.Table != table:
		return fmt.Errorf("%w: it belongs to a sweep of another table", ErrInvalidCursor)
	case c.Region != region && region == "":
		return fmt.Errorf("%w: it belongs to the sweep of region %q, this sweep has no region", ErrInvalidCursor, c.Region)
	case c.Region != region:
		return fmt.Errorf("%w: it belongs to a sweep of another region than %q", ErrInvalidCursor, region)
	case len(c.Segments) < 1 || len(c.Segments) > MaxSweepSegments:
		return fmt.Errorf("%w: %d segments", ErrInvalidCursor, len(c.Segments))
	}
	for i, seg := range c.Segments {
		if err := checkCursorKey(seg.After); err != nil {
			return fmt.Errorf("%w: segment %d: %s", ErrInvalidCursor, i, err.Error())
		}
	}
	return nil
}

// checkCursorKey reports a key that no DynamoDB key can be: a value with
// no type or several, an empty name or value.
func checkCursorKey(key map[string]sweepKeyValue) error {
	for name, v := range key {
		n, empty := 0, false
		if v.S != nil {
			n, empty = n+1, *v.S == ""
		}
		if v.N != nil {
			n, empty = n+1, *v.N == ""
		}
		if v.B != nil {
			n, empty = n+1, len(v.B) == 0
		}
		switch {
		case n != 1:
			return errors.New("a key value must have one type")
		case empty || name == "":
			return errors.New("a key has no empty name or value")
		}
	}
	return nil
}

// sweepKeyToCursor converts a LastEvaluatedKey; ok is false when it holds a
// value that no key attribute can have.
func sweepKeyToCursor(key map[string]types.AttributeValue) (map[string]sweepKeyValue, bool) {
	out := make(map[string]sweepKeyValue, len(key))
	for name, v := range key {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			out[name] = sweepKeyValue{S: aws.String(v.Value)}
		case *types.AttributeValueMemberN:
			out[name] = sweepKeyValue{N: aws.String(v.Value)}
		case *types.AttributeValueMemberB:
			out[name] = sweepKeyValue{B: append([]byte{}, v.Value...)}
		default:
			return nil, false
		}
	}
	return out, true
}

// sweepKeyFromCursor is the inverse of sweepKeyToCursor, for a cursor that
// sweepDecodeCursor accepted.
func sweepKeyFromCursor(key map[string]sweepKeyValue) map[string]types.AttributeValue {
	if key == nil {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(key))
	for name, v := range key {
		switch {
		case v.S != nil:
			out[name] = attrS(*v.S)
		case v.N != nil:
			out[name] = &types.AttributeValueMemberN{Value: *v.N}
		default:
			out[name] = attrB(v.B)
		}
	}
	return out
}

// sweepCursorKey is the partition key of the item in which Resume keeps
// the resume cursor of the sweeps of every record, in the key table
// itself. No key record's partition key begins with '#', and Sweep never
// deletes it: it counts it as a foreign item.
const sweepCursorKey = "#sweep-cursor"

// regionCursorKeyPrefix begins the partition key of a region's cursor item.
const regionCursorKeyPrefix = sweepCursorKey + "/"

// sweepCursorKeyFor returns the partition key of the item that keeps the
// resume cursor of the sweeps restricted to region: sweepCursorKey when
// region is "", otherwise sweepCursorKey + "/" + region. On a global table
// each region's sweeper thus keeps its own item, which only it writes.
func sweepCursorKeyFor(region string) string {
	if region == "" {
		return sweepCursorKey
	}
	return regionCursorKeyPrefix + region
}

// checkSweepRegion refuses a region longer than MaxSweepRegionLen, or not
// valid UTF-8 (DynamoDB would store another string: the region's sweeper
// would find none of its records).
func checkSweepRegion(region string) error {
	if len(region) > MaxSweepRegionLen {
		return fmt.Errorf("dynamostore: sweep region of %d bytes, more than %d (MaxSweepRegionLen)", len(region), MaxSweepRegionLen)
	}
	if !utf8.ValidString(region) {
		return fmt.Errorf("dynamostore: region %q is not valid UTF-8", region)
	}
	return nil
}

// Attributes of the cursor item besides pk.
const (
	attrSweepCursor  = "cursor"
	attrSweepUpdated = "updated"
)

// cursorItemKey returns the primary key of the item that keeps region's
// resume cursor: sweepCursorKeyFor(region) in the layout's namespace.
func (l *layout) cursorItemKey(region string) map[string]types.AttributeValue {
	return l.ItemKey(l.Namespaced(sweepCursorKeyFor(region)))
}

// loadSweepCursor returns the resume cursor saveSweepCursor saved in table
// for region, or "" when there is none: one consistent GetItem. Errors:
// *StoreError; *RecordError when that item is not a cursor item; without
// any call, an error when region is longer than MaxSweepRegionLen bytes.
func (l *layout) loadSweepCursor(ctx context.Context, client SweepClient, table, region string) (string, error) {
	if err := checkSweepRegion(region); err != nil {
		return "", err
	}
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &table,
		Key:            l.cursorItemKey(region),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return "", &StoreError{Op: "GetItem", Err: err}
	}
	if len(out.Item) == 0 {
		return "", nil
	}
	return getS(out.Item, attrSweepCursor)
}

// saveSweepCursor keeps cursor in table for loadSweepCursor with the same
// region: one PutItem, or, when cursor is "" (the pass finished), one
// DeleteItem. now is written as the item's "updated" time for operators.
// Errors: *StoreError, or, without any call, an error matching
// ErrCursorTooLarge when the item would exceed 400,000 bytes (never for a
// cursor a Sweeper returned for a key table), or one for a region longer
// than MaxSweepRegionLen bytes.
func (l *layout) saveSweepCursor(ctx context.Context, client SweepClient, table, region, cursor string, now time.Time) error {
	if err := checkSweepRegion(region); err != nil {
		return err
	}
	key := l.cursorItemKey(region)
	if cursor == "" {
		if _, err := client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &table, Key: key}); err != nil {
			return &StoreError{Op: "DeleteItem", Err: err}
		}
		return nil
	}
	if size := l.cursorItemBytes(len(cursor), region); size > cursorItemLimit {
		return fmt.Errorf("%w: the item would take %d bytes, more than DynamoDB's 400 KB (%d)", ErrCursorTooLarge, size, cursorItemLimit)
	}
	item := maps.Clone(key)
	item[attrSweepCursor] = attrS(cursor)
	item[attrSweepUpdated] = attrN(now.UnixMilli())
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: item}); err != nil {
		return &StoreError{Op: "PutItem", Err: err}
	}
	return nil
}
