package dynamostore

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// UnindexedScanInterval is how long a sweep in SweepIndex mode trusts a
// whole scan that found no key record outside the expiry index: 24 hours,
// the default Retention. After it, sweeps scan again (see SweepMode).
const UnindexedScanInterval = 24 * time.Hour

// indexCompleteKey is the partition key of the note of the start of the
// last scan that found no key record outside the index (see sweepCursorKey).
const indexCompleteKey = "#expiry-index-complete"

// loadIndexComplete returns region's note in epoch milliseconds (0: none).
func (l *layout) loadIndexComplete(ctx context.Context, client SweepClient, table, region string) (int64, error) {
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &table,
		Key:            l.reservedItemKey(indexCompleteKey, region),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, &StoreError{Op: "GetItem", Err: err, Table: table}
	}
	if len(out.Item) == 0 {
		return 0, nil
	}
	return getN(out.Item, attrSweepUpdated)
}

// saveIndexComplete notes that a scan started at since found none.
func (l *layout) saveIndexComplete(ctx context.Context, client SweepClient, table, region string, since int64) error {
	item := maps.Clone(l.reservedItemKey(indexCompleteKey, region))
	item[attrSweepUpdated] = attrN(since)
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: item}); err != nil {
		return &StoreError{Op: "PutItem", Err: err, Table: table}
	}
	return nil
}

// unindexedDue reports whether no scan that found none started within
// UnindexedScanInterval of now, reading the note while the known one is
// too old; a failed read is a failure of t, and due.
func (s *Sweeper) unindexedDue(ctx context.Context, now time.Time, t *sweepTally) bool {
	fresh := func(since int64) bool {
		return since > 0 && now.Before(time.UnixMilli(since).Add(UnindexedScanInterval))
	}
	if fresh(s.indexClean.Load()) {
		return false
	}
	since, err := s.layout.loadIndexComplete(ctx, s.client, s.table, s.opts.Region)
	if err != nil {
		t.fail(err, fmt.Sprintf("reading the note of the last scan for records outside index %s: %v", ExpiryIndexName, err))
		return true
	}
	s.indexClean.Store(since)
	return !fresh(since)
}

// unindexedDone notes a whole scan that found none, unless DryRun; a
// failed write is a failure of t, and the next sweep scans again.
func (s *Sweeper) unindexedDone(ctx context.Context, since int64, found bool, t *sweepTally) {
	if found || s.opts.DryRun {
		return
	}
	if err := s.layout.saveIndexComplete(ctx, s.client, s.table, s.opts.Region, since); err != nil {
		t.fail(err, fmt.Sprintf("noting a scan without records outside index %s: %v", ExpiryIndexName, err))
		return
	}
	s.indexClean.Store(since)
}

// unindexedItem decides an item as a scan does and counts a key record.
func (r *sweepRun) unindexedItem(ctx context.Context, now time.Time, item map[string]types.AttributeValue, t *sweepTally) {
	if _, ok := r.s.layout.sweepParse(item); ok {
		t.unindexed++
	}
	r.sweepItem(ctx, now, item, t)
}
