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
// finished scan that found every key record of the table in the expiry
// index: 24 hours, the default Retention. Once the last such scan started
// longer ago (or none ever finished), sweeps scan the table again for the
// key records without ExpiryBucketAttribute (see SweepMode), so that a
// record a Store without Options.ExpiryIndex wrote since is found, counted
// and evicted: with a Retention of 24 hours or more, before or about when
// it expires.
const UnindexedScanInterval = 24 * time.Hour

// indexCompleteKey is the partition key of the item in which a sweep in
// SweepIndex mode notes the start of the last scan that found no key
// record outside the expiry index ("#expiry-index-complete/" followed by
// the region for a sweep with SweepOptions.Region). Like the cursor's, no
// key record's partition key begins with '#', and sweeps count it as
// foreign and never delete it.
const indexCompleteKey = "#expiry-index-complete"

// indexCompleteItemKey returns the primary key of region's item that
// notes the last clean scan, in the layout's namespace.
func (l *layout) indexCompleteItemKey(region string) map[string]types.AttributeValue {
	v := indexCompleteKey
	if region != "" {
		v += "/" + region
	}
	return l.ItemKey(l.Namespaced(v))
}

// loadIndexComplete returns the start, in epoch milliseconds, of the last
// scan that found no key record outside the index, as saveIndexComplete
// noted it for region; 0 when none is noted. One consistent GetItem.
func (l *layout) loadIndexComplete(ctx context.Context, client SweepClient, table, region string) (int64, error) {
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &table,
		Key:            l.indexCompleteItemKey(region),
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

// saveIndexComplete notes for region that a scan started at since (epoch
// milliseconds) found no key record outside the index: one PutItem.
func (l *layout) saveIndexComplete(ctx context.Context, client SweepClient, table, region string, since int64) error {
	item := maps.Clone(l.indexCompleteItemKey(region))
	item[attrSweepUpdated] = attrN(since)
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: item}); err != nil {
		return &StoreError{Op: "PutItem", Err: err, Table: table}
	}
	return nil
}

// unindexedDue reports whether a sweep starting at now must scan for the
// key records outside the index: no scan that found none started within
// UnindexedScanInterval. It reads the note only while the last one it
// knows of is too old; a failed read is a failed call of t, and due.
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

// unindexedDone concludes a scan for the records outside the index that
// read the whole table: when it found none, and unless DryRun, it notes
// that the scan started at since found none (a failed write is a failed
// call of t: the next sweep scans again).
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

// unindexedItem decides one item of the scan for the records outside the
// index as a scan decides it, and counts it when it is a key record.
func (r *sweepRun) unindexedItem(ctx context.Context, now time.Time, item map[string]types.AttributeValue, t *sweepTally) {
	if _, ok := r.s.layout.sweepParse(item); ok {
		t.unindexed++
	}
	r.sweepItem(ctx, now, item, t)
}
