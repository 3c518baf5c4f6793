package dynamostore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ErrInvalidCursor reports a resume cursor that Sweep cannot use: not one
// that Sweep returned, damaged, or returned by a sweep of another table.
var ErrInvalidCursor = errors.New("dynamostore: invalid sweep cursor")

// maxCursorLen bounds the cursors sweepDecodeCursor reads: MaxSweepSegments
// keys of at most 2 KB each, base64-encoded, with room to spare.
const maxCursorLen = 4 << 20

// sweepCursor is the decoded form of a resume cursor: where each segment
// of an unfinished pass stands.
type sweepCursor struct {
	Version  int              `json:"v"`
	Table    string           `json:"table"`
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

const sweepCursorVersion = 1

// encode returns the cursor as an opaque string: base64url of its JSON.
func (c *sweepCursor) encode() string {
	b, _ := json.Marshal(c) // strings, byte slices, booleans: cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// sweepDecodeCursor decodes a cursor returned by a sweep of table. Any
// other input is an error matching ErrInvalidCursor; it never panics.
func sweepDecodeCursor(s, table string) (*sweepCursor, error) {
	if len(s) > maxCursorLen {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrInvalidCursor, maxCursorLen)
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64url", ErrInvalidCursor)
	}
	var c sweepCursor
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%w: not a cursor", ErrInvalidCursor)
	}
	switch {
	case c.Version != sweepCursorVersion:
		return nil, fmt.Errorf("%w: unknown version %d", ErrInvalidCursor, c.Version)
	case c.Table != table:
		return nil, fmt.Errorf("%w: it belongs to a sweep of another table", ErrInvalidCursor)
	case len(c.Segments) < 1 || len(c.Segments) > MaxSweepSegments:
		return nil, fmt.Errorf("%w: %d segments", ErrInvalidCursor, len(c.Segments))
	}
	for i, seg := range c.Segments {
		if seg.Done && seg.After != nil {
			return nil, fmt.Errorf("%w: segment %d both done and pending", ErrInvalidCursor, i)
		}
		if seg.After != nil && len(seg.After) == 0 {
			return nil, fmt.Errorf("%w: segment %d has an empty key", ErrInvalidCursor, i)
		}
		for _, v := range seg.After {
			n := 0
			if v.S != nil {
				n++
			}
			if v.N != nil {
				n++
			}
			if v.B != nil {
				n++
			}
			if n != 1 {
				return nil, fmt.Errorf("%w: segment %d: a key value must have one type", ErrInvalidCursor, i)
			}
		}
	}
	return &c, nil
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

// SweepCursorKey is the partition key of the item in which SaveSweepCursor
// keeps a scheduled sweeper's resume cursor, in the key table itself.
// PartitionKeyFor never returns it (its values begin with a decimal
// digit), and Sweep never deletes it: it counts it as a foreign item.
const SweepCursorKey = "#sweep-cursor"

// Attributes of the cursor item besides pk.
const (
	attrSweepCursor  = "cursor"
	attrSweepUpdated = "updated"
)

// CursorClient is the set of DynamoDB calls LoadSweepCursor and
// SaveSweepCursor make. *dynamodb.Client satisfies it.
type CursorClient interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

var _ CursorClient = (*dynamodb.Client)(nil)

// LoadSweepCursor returns the resume cursor saved in table by
// SaveSweepCursor, or "" when there is none (no pass is unfinished). It
// costs one consistent GetItem. Errors: *StoreError, or *RecordError when
// the item at SweepCursorKey is not a cursor item.
func LoadSweepCursor(ctx context.Context, client CursorClient, table string) (string, error) {
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &table,
		Key:            map[string]types.AttributeValue{attrPK: attrS(SweepCursorKey)},
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

// SaveSweepCursor keeps cursor in table for the next LoadSweepCursor: one
// PutItem of the item at SweepCursorKey, or, when cursor is "" (the pass
// finished), one DeleteItem of it. Concurrent savers overwrite each other
// and the last one wins: as each run saves only positions it has swept up
// to, that at worst makes the next sweep repeat part of a pass. now is written as
// the item's "updated" time for operators. Errors: *StoreError.
func SaveSweepCursor(ctx context.Context, client CursorClient, table, cursor string, now time.Time) error {
	key := map[string]types.AttributeValue{attrPK: attrS(SweepCursorKey)}
	if cursor == "" {
		if _, err := client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &table, Key: key}); err != nil {
			return &StoreError{Op: "DeleteItem", Err: err}
		}
		return nil
	}
	item := map[string]types.AttributeValue{
		attrPK:           key[attrPK],
		attrSweepCursor:  attrS(cursor),
		attrSweepUpdated: attrN(now.UnixMilli()),
	}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: item}); err != nil {
		return &StoreError{Op: "PutItem", Err: err}
	}
	return nil
}
