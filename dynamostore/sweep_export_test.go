package dynamostore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// SweepTestItem returns the item a Store with Options.ExpiryIndex writes
// for rec: encoded by the store's own encoders, so that tests can seed
// thousands of records with BatchWriteItem instead of one claim each, for
// sweeps of either mode. A completed record needs rec.Response.
func SweepTestItem(rec *Record) map[string]types.AttributeValue {
	l := *defaultLayout
	l.indexed = true
	if rec.State == StateCompleted {
		return l.encodeCompleted(rec, DefaultCompressAbove, maxItemBytes)
	}
	return l.baseItem(rec)
}

// SweepKeyHash is the hash by which sweep logs name a record.
func SweepKeyHash(pk string) string { return sweepKeyHash(pk) }

// SweepCursorKey is the partition key of the cursor item Resume keeps.
const SweepCursorKey = sweepCursorKey

// LoadSweepCursor reads the cursor Resume keeps for the sweeps of every record.
func LoadSweepCursor(ctx context.Context, client SweepClient, table string) (string, error) {
	return defaultLayout.loadSweepCursor(ctx, client, table, "")
}

// SaveSweepCursor writes the cursor Resume keeps for the sweeps of every record.
func SaveSweepCursor(ctx context.Context, client SweepClient, table, cursor string, now time.Time) error {
	return defaultLayout.saveSweepCursor(ctx, client, table, "", cursor, now)
}

// NoteIndexComplete notes, as a sweep in SweepIndex mode of region does
// after a scan that found no key record outside the expiry index, that
// such a scan of table (records of schema) started at since.
func NoteIndexComplete(ctx context.Context, client SweepClient, table string, schema KeySchema, region string, since time.Time) error {
	return newLayout(mustSchema("NoteIndexComplete", schema)).saveIndexComplete(ctx, client, table, region, since.UnixMilli())
}

// IndexCompleteKey is the partition key of the note of the last such scan
// of the sweeps without a region.
const IndexCompleteKey = indexCompleteKey
