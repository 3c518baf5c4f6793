package dynamostore

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

var (
	// ErrLockHeld reports that ReleaseKey found the key in progress under a
	// lock that has not expired: its request may still be running.
	ErrLockHeld = errors.New("dynamostore: lock still held")

	// ErrKeyCompleted reports that ReleaseKey found the key completed.
	// Releasing a completed key lets the next retry execute the request
	// again: a duplicate.
	ErrKeyCompleted = errors.New("dynamostore: key completed")

	// ErrOtherRegion reports that ReleaseKey, with ReleaseKeyOptions.Region
	// set, found a record another region wrote.
	ErrOtherRegion = errors.New("dynamostore: record of another region")
)

// ReleaseKeyOptions widen what ReleaseKey may delete. The zero value
// releases only a stuck key: in progress with an expired lock, which is
// what the sweeper reclaims.
type ReleaseKeyOptions struct {
	// InProgress releases an in-progress record even while its lock holds.
	// If its request is still running, its commit then fails with
	// ErrLockLost and writes nothing, but a retry may execute it again
	// meanwhile, and effects outside DynamoDB are not fenced.
	InProgress bool
	// Completed releases a completed record too: the next retry of its
	// request executes again, a duplicate.
	Completed bool
	// Region, when set, releases only a record that region wrote, or that
	// no region wrote: a region's records are deleted in that region's own
	// replica, as a sweep with SweepOptions.Region deletes them, since on
	// a global table a delete in another replica can replicate over a
	// newer write of that region.
	Region string
}

// ReleaseKey deletes the live record of (scope, key) so that the next
// request with the key executes: an operator's tool for a stuck key. It
// reads the record (one consistent GetItem), then deletes it with one
// DeleteItem conditioned on the same state and lock token and, for a
// stuck record, its lock still expired. It returns the deleted record.
//
// Errors: ErrInvalidRequest for a scope or key that is not valid UTF-8
// (no call); ErrNotFound when there is no live record; ErrLockHeld (an
// in-progress record under a live lock, without InProgress),
// ErrKeyCompleted (without Completed) and ErrOtherRegion (a record of a
// region other than Region), each with the record left in place;
// ErrLockLost when the record changed between the read and the delete (a
// delete the SDK retried that finds the record gone by a consistent read
// had deleted it, and returns it); *StoreError; *RecordError.
func (s *Store) ReleaseKey(ctx context.Context, scope, key string, optFns ...func(*ReleaseKeyOptions)) (*Record, error) {
	var o ReleaseKeyOptions
	for _, fn := range optFns {
		fn(&o)
	}
	rec, err := s.Get(ctx, scope, key)
	if err != nil {
		return nil, err
	}
	now := s.opts.Now()
	pk := s.layout.Value(scope, key)
	var in *dynamodb.DeleteItemInput
	switch {
	case o.Region != "" && rec.Region != "" && rec.Region != o.Region:
		return rec, ErrOtherRegion
	case rec.State == StateCompleted && !o.Completed:
		return rec, ErrKeyCompleted
	case rec.State == StateInProgress && rec.LockExpires.UnixMilli() < now.UnixMilli(): // the reclaim condition's precision
		in = s.layout.reclaimInput(s.table, pk, rec.LockToken, now)
	case rec.State == StateInProgress && !o.InProgress:
		return rec, ErrLockHeld
	default:
		in = &dynamodb.DeleteItemInput{
			TableName:                &s.table,
			Key:                      s.layout.ItemKey(pk),
			ConditionExpression:      aws.String("#state = :state AND #lock = :lock"),
			ExpressionAttributeNames: map[string]string{"#state": attrState, "#lock": attrLock},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":state": stateValue(rec.State),
				":lock":  lockValue(rec.LockToken),
			},
		}
	}
	attempts := 0
	_, err = s.client.DeleteItem(ctx, in, countAttempts(&attempts))
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return rec, nil
	case errors.As(err, &ccf):
		if deleted, _ := deletedByEarlierAttempt(ctx, s.client, in, attempts); deleted {
			return rec, nil
		}
		return nil, ErrLockLost
	}
	return nil, &StoreError{Op: "DeleteItem", Err: err, Table: s.table}
}
