package dynamostore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/internal/keyschema"
)

// EnsureExpiryIndex makes the existing key table ready for a Sweeper in
// SweepIndex mode: it creates the expiry index if missing (one
// UpdateTable) and waits, at most maxWait (zero: two minutes), until it
// is readable (ACTIVE, or UPDATING). The index is the global secondary
// index ExpiryIndexName, partition key ExpiryBucketAttribute (String),
// sort key the schema's TTLAttribute (Number), projecting INCLUDE "c",
// "e", "g" and "idemkey" (the claim time, the lock's expiry, the region
// and the marker): attributes no commit changes. On a provisioned table
// it gets the table's capacity; on an on-demand table it is on-demand.
//
// An existing index is only checked: another key schema or projection
// (fewer attributes, or more, which every commit would write) is an error
// matching ErrExpiryIndex that names what is wrong; delete the index and
// call again. A missing table is an error (create it with EnsureTable or
// EnsureSchemaTable), and so is one whose key schema is not the schema's
// (ErrTableSchema). It is idempotent and safe to call concurrently.
//
// DynamoDB backfills a new index from the table's items, which takes
// minutes to hours on a large table: the wait may end with an error saying
// the index is still CREATING; call again to keep waiting. Records without
// ExpiryBucketAttribute are not in the index: see SweepMode.
//
// Cost: one index write unit (per 1 KB entry, about 100 bytes with a short
// key) for each write that puts, changes or removes a record's entry; a
// write that leaves it as it was costs the index nothing. Per outcome:
// claim +1, commit 0 (within the lock; +2 after it, as exp moves),
// release +1, a claim replacing an expired or stuck record +2, a replay,
// a request in flight or a mismatch 0, CommitFirst +1, eviction (by the
// sweeper or TTL) +1. A first execution later evicted costs 2 index write
// units besides its 3 or more on the table.
//
// It panics if schema is invalid (KeySchema.Validate).
func EnsureExpiryIndex(ctx context.Context, client TableClient, table string, schema KeySchema, maxWait time.Duration) error {
	l := newLayout(mustSchema("dynamostore: EnsureExpiryIndex", schema))
	if maxWait <= 0 {
		maxWait = 2 * time.Minute
	}
	deadline := time.Now().Add(maxWait)
	desc, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table})
	if err != nil {
		return &StoreError{Op: "DescribeTable", Err: err, Table: table}
	}
	if err := checkKeySchema(table, desc.Table, l.Schema); err != nil {
		return err
	}
	if gsi, err := l.expiryIndexOf(table, desc.Table); gsi == nil {
		if _, uerr := client.UpdateTable(ctx, l.createExpiryIndex(table, desc.Table)); uerr != nil {
			// Another process may have created it meanwhile: look again.
			again, derr := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table})
			if derr != nil {
				return &StoreError{Op: "UpdateTable", Err: uerr, Table: table}
			}
			if gsi, _ := l.expiryIndexOf(table, again.Table); gsi == nil {
				return &StoreError{Op: "UpdateTable", Err: uerr, Table: table}
			}
		}
	} else if err != nil {
		return err
	}
	return l.waitExpiryIndex(ctx, client, table, deadline)
}

// createExpiryIndex returns the UpdateTable that creates the index on t.
func (l *layout) createExpiryIndex(table string, t *types.TableDescription) *dynamodb.UpdateTableInput {
	create := &types.CreateGlobalSecondaryIndexAction{
		IndexName: aws.String(ExpiryIndexName),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(ExpiryBucketAttribute), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(l.TTLAttribute), KeyType: types.KeyTypeRange},
		},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: indexProjectedAttributes},
	}
	if pt := t.ProvisionedThroughput; pt != nil && aws.ToInt64(pt.ReadCapacityUnits) > 0 &&
		(t.BillingModeSummary == nil || t.BillingModeSummary.BillingMode != types.BillingModePayPerRequest) {
		create.ProvisionedThroughput = &types.ProvisionedThroughput{
			ReadCapacityUnits: pt.ReadCapacityUnits, WriteCapacityUnits: pt.WriteCapacityUnits,
		}
	}
	return &dynamodb.UpdateTableInput{
		TableName: &table,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(ExpiryBucketAttribute), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(l.TTLAttribute), AttributeType: types.ScalarAttributeTypeN},
		},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: create}},
	}
}

// waitExpiryIndex polls DescribeTable (200 ms to 5 s apart) until the
// index is readable or deadline.
func (l *layout) waitExpiryIndex(ctx context.Context, client TableClient, table string, deadline time.Time) error {
	delay := 200 * time.Millisecond
	for {
		desc, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table})
		if err != nil {
			return &StoreError{Op: "DescribeTable", Err: err, Table: table}
		}
		gsi, err := l.expiryIndexOf(table, desc.Table)
		if err != nil {
			return err
		}
		status := indexStatus(gsi)
		if indexReadable(gsi) {
			return nil
		}
		if !time.Now().Add(delay).Before(deadline) {
			return fmt.Errorf("%w: table %q: index %q still %s (table %s) at the end of the wait; DynamoDB backfills a new index "+
				"from the table's items, which takes long on a large table: call again to keep waiting",
				ErrExpiryIndex, table, ExpiryIndexName, status, desc.Table.TableStatus)
		}
		if err := sleepTimer(ctx, delay); err != nil {
			return err
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// indexReadable reports whether the index answers with every entry.
func indexReadable(gsi *types.GlobalSecondaryIndexDescription) bool {
	switch indexStatus(gsi) {
	case types.IndexStatusActive, types.IndexStatusUpdating:
		return true
	}
	return false
}

// indexStatus is ACTIVE where an implementation reports none (the
// embedded emulator's indexes exist once created).
func indexStatus(gsi *types.GlobalSecondaryIndexDescription) types.IndexStatus {
	if gsi.IndexStatus == "" {
		return types.IndexStatusActive
	}
	return gsi.IndexStatus
}

// expiryIndexOf returns the expiry index of t and checks it is the one
// EnsureExpiryIndex creates: missing, nil and an error; unfit, the index
// and an error (both ErrExpiryIndex).
func (l *layout) expiryIndexOf(table string, t *types.TableDescription) (*types.GlobalSecondaryIndexDescription, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: table %q is not described", ErrExpiryIndex, table)
	}
	i := slices.IndexFunc(t.GlobalSecondaryIndexes, func(g types.GlobalSecondaryIndexDescription) bool {
		return aws.ToString(g.IndexName) == ExpiryIndexName
	})
	if i < 0 {
		return nil, fmt.Errorf("%w: table %q has no global secondary index %q", ErrExpiryIndex, table, ExpiryIndexName)
	}
	gsi := &t.GlobalSecondaryIndexes[i]
	unfit := func(format string, args ...any) error {
		return fmt.Errorf("%w: table %q: index %q %s", ErrExpiryIndex, table, ExpiryIndexName, fmt.Sprintf(format, args...))
	}
	hash, rng := keyNames(gsi.KeySchema)
	if hash != ExpiryBucketAttribute || rng != l.TTLAttribute {
		return gsi, unfit("has partition key %q and sort key %q; it must have partition key %q and sort key %q",
			hash, rng, ExpiryBucketAttribute, l.TTLAttribute)
	}
	for _, d := range t.AttributeDefinitions {
		name := aws.ToString(d.AttributeName)
		switch {
		case name == ExpiryBucketAttribute && d.AttributeType != types.ScalarAttributeTypeS:
			return gsi, unfit("has %q of type %s; it must be a String", name, d.AttributeType)
		case name == l.TTLAttribute && d.AttributeType != types.ScalarAttributeTypeN:
			return gsi, unfit("has %q of type %s; it must be a Number (epoch seconds)", name, d.AttributeType)
		}
	}
	p := gsi.Projection
	var want []string
	for _, name := range indexProjectedAttributes {
		if name != keyschema.Marker || marked(l.Schema) {
			want = append(want, name)
		}
	}
	var got []string
	if p != nil {
		got = p.NonKeyAttributes
	}
	var extra []string
	for _, name := range got {
		if !slices.Contains(indexProjectedAttributes, name) {
			extra = append(extra, name)
		}
	}
	missing := slices.DeleteFunc(slices.Clone(want), func(name string) bool { return slices.Contains(got, name) })
	if p == nil || p.ProjectionType != types.ProjectionTypeInclude || len(missing) > 0 || len(extra) > 0 {
		what := "projects nothing"
		switch {
		case p == nil:
		case p.ProjectionType != types.ProjectionTypeInclude:
			what = "projects " + string(p.ProjectionType)
		case len(extra) > 0:
			what = "projects INCLUDE " + strings.Join(got, ", ") + ", which a commit changes"
		default:
			what = "projects INCLUDE without " + strings.Join(missing, ", ") + ", which a sweep reads"
		}
		return gsi, unfit("%s; it must project INCLUDE %s exactly, so that a commit writes no index entry: "+
			"delete the index and call EnsureExpiryIndex again to recreate it",
			what, strings.Join(indexProjectedAttributes, ", "))
	}
	return gsi, nil
}
