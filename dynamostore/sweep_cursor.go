package dynamostore

import (
	"context"
	"encoding/base64"
	"encoding/binary"
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

// maxCursorLen bounds the cursor strings the decoders read: far above
// any cursor a sweep returns, which fits in one item.
const maxCursorLen = 4 << 20

// sweepCursor is the decoded form of a resume cursor: where each segment
// of an unfinished pass stands.
type sweepCursor struct {
	Table string
	// Region is the SweepOptions.Region of the sweep that wrote the
	// cursor; "" for none.
	Region   string
	Segments []sweepSegCursor
}

// sweepSegCursor is one segment's position: done, or the key to start
// after (nil: from the segment's beginning).
type sweepSegCursor struct {
	Done  bool
	After map[string]sweepKeyValue
}

// sweepKeyValue is a key attribute value: exactly one of S, N, B. Key
// attributes cannot have any other type.
type sweepKeyValue struct {
	S *string
	N *string
	B []byte
}

// sweepCursorVersion is the version of the cursors of SweepScan mode, the
// only one decoders read (versions 1 and 2, unreleased, had no region or
// were JSON, whose escapes made the worst case six times a key's size). A
// key costs its own bytes plus a few of framing, which bounds a cursor by
// its segment count alone.
const sweepCursorVersion = 3

// newSweepCursor returns the cursor of a pass of segments segments from
// the start, for a sweep of table restricted to region ("" for none).
func newSweepCursor(table, region string, segments int) *sweepCursor {
	return &sweepCursor{Table: table, Region: region, Segments: make([]sweepSegCursor, segments)}
}

// Framing of a version 3 cursor, before base64url (no padding):
//
//	version byte (3)
//	uvarint length, table name
//	uvarint length, region (0 for none, at most MaxSweepRegionLen bytes)
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

// Worst-case sizes of a cursor of a key table: a region of
// MaxSweepRegionLen bytes, a table name of
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
// cursor, its value of at most maxValue bytes.
func keyAttrWorstBytes(name string, maxValue int) int {
	return len(binary.AppendUvarint(nil, uint64(len(name)))) + len(name) + 1 + len(binary.AppendUvarint(nil, uint64(maxValue))) + maxValue
}

// encode returns the cursor as an opaque string: base64url of its binary
// form.
func (c *sweepCursor) encode() string {
	b := appendBytes([]byte{sweepCursorVersion}, []byte(c.Table))
	b = appendBytes(b, []byte(c.Region))
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

// sweepDecodeCursor decodes a cursor returned by a sweep in SweepScan
// mode of table restricted to region ("" for none). Any other input, a
// cursor of another table, region or mode included, is an error matching
// ErrInvalidCursor; it never panics.
func sweepDecodeCursor(s, table, region string) (*sweepCursor, error) {
	raw, err := cursorBytes(s)
	if err != nil {
		return nil, err
	}
	var c *sweepCursor
	switch {
	case len(raw) > 0 && raw[0] == sweepCursorVersion:
		c, err = decodeScanCursor(raw[1:])
	case len(raw) > 0 && raw[0] == sweepIndexCursorVersion:
		err = fmt.Errorf("%w: it belongs to a sweep in %s mode, this one is in %s mode", ErrInvalidCursor, SweepIndex, SweepScan)
	default:
		err = fmt.Errorf("%w: not a cursor", ErrInvalidCursor)
	}
	if err != nil {
		return nil, err
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

// decodeScanCursor reads the binary form after its version byte.
func decodeScanCursor(raw []byte) (*sweepCursor, error) {
	r := &cursorReader{b: raw}
	c := &sweepCursor{Table: string(r.bytes())}
	if c.Region = string(r.bytes()); len(c.Region) > MaxSweepRegionLen {
		r.fail()
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

// validate checks what the cursor of a sweep of table in region holds.
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
