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

// ErrCursorTooLarge reports a cursor that Resume cannot keep in the table:
// its item would exceed DynamoDB's 400 KB, counted as 400,000 bytes. A
// cursor a Sweeper returns always fits (see MaxSweepSegments).
var ErrCursorTooLarge = errors.New("dynamostore: sweep cursor too large for one item")

// MaxSweepRegionLen bounds SweepOptions.Region: 64 bytes (AWS region
// names are shorter than 30). MaxSweepSegments counts a region this long.
const MaxSweepRegionLen = 64

// DynamoDB's limits behind MaxSweepSegments.
const (
	// cursorItemLimit is 400 KB counted as 400,000 bytes: implementations
	// differ on the kilobyte (moto refuses items over 405,000 bytes).
	cursorItemLimit      = 400_000
	maxTableNameBytes    = 255
	maxPartitionKeyBytes = 2048
	maxSortKeyBytes      = 1024
	maxUpdatedBytes      = 21 // the cursor item's "updated": 20 digits and a sign
)

// maxCursorLen bounds the cursor strings the decoders read, far above any
// a sweep returns.
const maxCursorLen = 4 << 20

// sweepCursor is a decoded scan cursor: where each segment stands.
type sweepCursor struct {
	Table    string
	Region   string // "" for none
	Segments []sweepSegCursor
}

// sweepSegCursor is one segment's position: done, or the key to start
// after (nil: from the segment's beginning).
type sweepSegCursor struct {
	Done  bool
	After map[string]sweepKeyValue
}

// sweepKeyValue is a key attribute value: exactly one of S, N, B.
type sweepKeyValue struct {
	S *string
	N *string
	B []byte
}

// sweepCursorVersion is the version of SweepScan mode's cursors.
const sweepCursorVersion = 3

// newSweepCursor returns the cursor of a new pass.
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

// cursorHeaderBytes is the largest header of a cursor: a table name of
// maxTableNameBytes and a region of MaxSweepRegionLen (two-byte uvarints).
const cursorHeaderBytes = 1 + 2 + maxTableNameBytes + 1 + MaxSweepRegionLen + 2

// cursorItemBytes returns the DynamoDB size of the item in which Resume
// keeps a cursor of cursorLen bytes for region, "updated" at its largest.
func (l *layout) cursorItemBytes(cursorLen int, region string) int {
	n := 0
	for name, v := range l.cursorItemKey(region) {
		n += len(name) + valueSize(v)
	}
	return n + len(attrSweepCursor) + cursorLen + len(attrSweepUpdated) + maxUpdatedBytes
}

// maxSweepSegments returns the most segments whose worst-case cursor (each
// pending after the largest key of the schema, a Region of
// MaxSweepRegionLen) fits in the cursor item: MaxSweepSegments on the
// default schema, fewer on one with longer keys.
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

// keyAttrWorstBytes is a key attribute's largest size in a cursor.
func keyAttrWorstBytes(name string, maxValue int) int {
	return len(binary.AppendUvarint(nil, uint64(len(name)))) + len(name) + 1 + len(binary.AppendUvarint(nil, uint64(maxValue))) + maxValue
}

// encode returns the cursor as an opaque string.
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

// appendCursorKey appends a key in the binary form (see the framing).
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

// sweepDecodeCursor decodes a scan cursor of table and region; any other
// input is an error matching ErrInvalidCursor.
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

// cursorBytes returns the bytes of a cursor string.
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

// key reads a key appendCursorKey wrote; empty (not nil) for a count of 0.
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

// checkCursorOwner refuses a cursor of table cTable and region cRegion for a
// sweep of table in region.
func checkCursorOwner(cTable, cRegion, table, region string) error {
	switch {
	case cTable != table:
		return fmt.Errorf("%w: it belongs to a sweep of another table", ErrInvalidCursor)
	case cRegion != region && region == "":
		return fmt.Errorf("%w: it belongs to the sweep of region %q, this sweep has no region", ErrInvalidCursor, cRegion)
	case cRegion != region:
		return fmt.Errorf("%w: it belongs to a sweep of another region than %q", ErrInvalidCursor, region)
	}
	return nil
}

// validate checks what the cursor of a sweep of table in region holds.
func (c *sweepCursor) validate(table, region string) error {
	if err := checkCursorOwner(c.Table, c.Region, table, region); err != nil {
		return err
	}
	if len(c.Segments) < 1 || len(c.Segments) > MaxSweepSegments {
		return fmt.Errorf("%w: %d segments", ErrInvalidCursor, len(c.Segments))
	}
	for i, seg := range c.Segments {
		if err := checkCursorKey(seg.After); err != nil {
			return fmt.Errorf("%w: segment %d: %s", ErrInvalidCursor, i, err.Error())
		}
	}
	return nil
}

// checkCursorKey reports a key that no DynamoDB key can be.
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

// sweepKeyToCursor converts a LastEvaluatedKey; ok is false for a value no
// key attribute can have.
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

// sweepKeyFromCursor is the inverse of sweepKeyToCursor.
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

// sweepCursorKey is the partition key of Resume's cursor item, followed by
// "/" and the region for a regional sweep. No key record's partition key
// begins with '#': sweeps count it as foreign.
const sweepCursorKey = "#sweep-cursor"

// checkSweepRegion refuses a region longer than MaxSweepRegionLen, or not
// valid UTF-8 (DynamoDB would store another string).
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

// cursorItemKey returns the primary key of region's cursor item.
func (l *layout) cursorItemKey(region string) map[string]types.AttributeValue {
	return l.reservedItemKey(sweepCursorKey, region)
}

// reservedItemKey returns the primary key of a sweep's own item name (for
// region, name + "/" + region) in the layout's namespace.
func (l *layout) reservedItemKey(name, region string) map[string]types.AttributeValue {
	if region != "" {
		name += "/" + region
	}
	return l.ItemKey(l.Namespaced(name))
}

// loadSweepCursor returns region's saved cursor, or "": one consistent
// GetItem.
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

// saveSweepCursor saves region's cursor with now as "updated" (one
// PutItem), or deletes the item when cursor is "" (one DeleteItem). A
// cursor too large for the item is refused without a call.
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
