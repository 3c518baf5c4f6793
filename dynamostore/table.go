package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemkey/idemkey/internal/keyschema"
)

// TableClient is the set of DynamoDB calls EnsureTable and its variants
// make; UpdateTable is EnsureExpiryIndex's.
type TableClient interface {
	UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
}

var _ TableClient = (*dynamodb.Client)(nil)

// ErrTableSchema reports an existing table that cannot hold key records:
// its key schema is not the KeySchema's (on the default schema: a single
// String partition key named "pk"), or TTL is enabled on another attribute
// than the schema's TTLAttribute (or, for EnsureSchemaTable on a schema
// other than the default, is off).
var ErrTableSchema = errors.New("dynamostore: table schema does not fit key records")

// EnsureTable makes table ready for key records: it creates it if missing
// (on-demand capacity, String partition key "pk"), waits until it is
// ACTIVE (at most maxWait; zero: two minutes), and enables TTL on
// TTLAttribute unless it is ENABLED or ENABLING there. When the update is
// refused because another process changed TTL meanwhile, it succeeds only
// if TTL is then ENABLED or ENABLING on TTLAttribute. It is idempotent and
// safe to call at every start, from several processes at once. An existing
// table with another key schema, or with TTL on another attribute, is an
// error matching ErrTableSchema.
func EnsureTable(ctx context.Context, client TableClient, table string, maxWait time.Duration) error {
	if _, err := ensureActive(ctx, client, table, defaultLayout.Schema, maxWait); err != nil {
		return err
	}
	return ensureTTL(ctx, client, table, defaultLayout.TTLAttribute)
}

// EnsureSchemaTable is EnsureTable for the table of a KeySchema (with the
// zero KeySchema, it is EnsureTable). With any other schema it changes
// only a table it creates, with the schema's String keys and TTL on its
// TTLAttribute; of an existing table it checks that the key schema is the
// schema's and that TTL is ENABLED or ENABLING on TTLAttribute. TTL on
// another attribute (a table has one: set TTLAttribute to the table's) or
// off is an error that says what to do. All match ErrTableSchema.
//
// It panics if schema is invalid (KeySchema.Validate).
func EnsureSchemaTable(ctx context.Context, client TableClient, table string, schema KeySchema, maxWait time.Duration) error {
	s := mustSchema("dynamostore: EnsureSchemaTable", schema)
	if s == defaultLayout.Schema {
		return EnsureTable(ctx, client, table, maxWait)
	}
	created, err := ensureActive(ctx, client, table, s, maxWait)
	if err != nil {
		return err
	}
	if created {
		return ensureTTL(ctx, client, table, s.TTLAttribute)
	}
	ttl, err := describeTTL(ctx, client, table)
	if err != nil {
		return err
	}
	on, err := ttlOn(table, ttl, s.TTLAttribute)
	if err == nil && !on {
		err = fmt.Errorf("%w: table %q has TTL off; enable it on %q (UpdateTimeToLive), this call changes no table it did not create",
			ErrTableSchema, table, s.TTLAttribute)
	}
	return err
}

// ensureActive creates table if missing (without TTL) or checks its key
// schema, waits until it is ACTIVE, and reports whether it created it.
func ensureActive(ctx context.Context, client TableClient, table string, s keyschema.Schema, maxWait time.Duration) (created bool, err error) {
	if maxWait <= 0 {
		maxWait = 2 * time.Minute
	}
	desc, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table})
	var notFound *types.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		in := &dynamodb.CreateTableInput{
			TableName:            &table,
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(s.PartitionKey), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(s.PartitionKey), KeyType: types.KeyTypeHash}},
		}
		if s.SortKey != "" {
			in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(s.SortKey), AttributeType: types.ScalarAttributeTypeS})
			in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(s.SortKey), KeyType: types.KeyTypeRange})
		}
		_, err = client.CreateTable(ctx, in)
		var inUse *types.ResourceInUseException
		switch {
		case err == nil:
			created = true
		case !errors.As(err, &inUse):
			return false, &StoreError{Op: "CreateTable", Err: err}
		}
	case err != nil:
		return false, &StoreError{Op: "DescribeTable", Err: err}
	default:
		if err := checkKeySchema(table, desc.Table, s); err != nil {
			return false, err
		}
	}
	if desc == nil || desc.Table == nil || desc.Table.TableStatus != types.TableStatusActive {
		w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
			o.MinDelay = 200 * time.Millisecond
			o.MaxDelay = 5 * time.Second
		})
		if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: &table}, maxWait); err != nil {
			return created, &StoreError{Op: "DescribeTable", Err: err}
		}
	}
	return created, nil
}

// ErrTTLEnabled reports a table whose TTL is enabled (or enabling, or
// still disabling) where EnsureTableWithoutTTL requires it off. It matches
// ErrTableSchema too.
var ErrTTLEnabled = fmt.Errorf("%w: TTL must be off", ErrTableSchema)

// EnsureTableWithoutTTL is EnsureTable for a key table whose expired
// records a sweeper deletes and DynamoDB TTL must not: a multi-Region
// strongly consistent (MRSC) global table, which does not support TTL, or
// an MREC global table in multiregion's HomeRegion mode, where a TTL
// deletion replicates and can erase a newer record (see multiregion).
//
// It creates and waits for the table as EnsureTable does, without TTL,
// and never changes TTL: TTL ENABLED, ENABLING or DISABLING (deletions
// continue until DISABLED), on any attribute, is an error matching
// ErrTTLEnabled. Another key schema is an error matching ErrTableSchema.
func EnsureTableWithoutTTL(ctx context.Context, client TableClient, table string, maxWait time.Duration) error {
	if _, err := ensureActive(ctx, client, table, defaultLayout.Schema, maxWait); err != nil {
		return err
	}
	ttl, err := describeTTL(ctx, client, table)
	if err != nil {
		return err
	}
	if d := ttl; d != nil && d.TimeToLiveStatus != "" && d.TimeToLiveStatus != types.TimeToLiveStatusDisabled {
		return fmt.Errorf("%w: table %q has TTL %s on %q; disable it (UpdateTimeToLive) and wait until it is DISABLED, "+
			"and evict expired records with a sweeper", ErrTTLEnabled, table, d.TimeToLiveStatus, aws.ToString(d.AttributeName))
	}
	return nil
}

func checkKeySchema(table string, t *types.TableDescription, s keyschema.Schema) error {
	var pk, sk string
	if t != nil {
		pk, sk = keyNames(t.KeySchema)
	}
	if pk != s.PartitionKey || sk != s.SortKey {
		if s.SortKey == "" {
			return fmt.Errorf("%w: table %q must have the single partition key %q; it has partition key %q and sort key %q",
				ErrTableSchema, table, s.PartitionKey, pk, sk)
		}
		return fmt.Errorf("%w: table %q must have partition key %q and sort key %q; it has %q and %q",
			ErrTableSchema, table, s.PartitionKey, s.SortKey, pk, sk)
	}
	for _, d := range t.AttributeDefinitions {
		if name := aws.ToString(d.AttributeName); (name == pk || name == sk) && d.AttributeType != types.ScalarAttributeTypeS {
			return fmt.Errorf("%w: table %q: %q must be a String", ErrTableSchema, table, name)
		}
	}
	return nil
}

// keyNames returns the partition and sort key attributes of a key schema
// ("" for none).
func keyNames(schema []types.KeySchemaElement) (hash, sort string) {
	for _, e := range schema {
		switch e.KeyType {
		case types.KeyTypeHash:
			hash = aws.ToString(e.AttributeName)
		case types.KeyTypeRange:
			sort = aws.ToString(e.AttributeName)
		}
	}
	return hash, sort
}

func ensureTTL(ctx context.Context, client TableClient, table, ttlAttr string) error {
	ttl, err := describeTTL(ctx, client, table)
	if err != nil {
		return err
	}
	if on, err := ttlOn(table, ttl, ttlAttr); on || err != nil {
		return err
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: &table,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(ttlAttr),
			Enabled:       aws.Bool(true),
		},
	})
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ValidationException" {
		// Another process enabled it between our describe and update.
		if again, derr := describeTTL(ctx, client, table); derr == nil {
			if on, err := ttlOn(table, again, ttlAttr); on || err != nil {
				return err
			}
		}
	}
	if err != nil {
		return &StoreError{Op: "UpdateTimeToLive", Err: err}
	}
	return nil
}

// ttlOn reports whether d says TTL is ENABLED or ENABLING on want; on
// another attribute that is an ErrTableSchema.
func ttlOn(table string, d *types.TimeToLiveDescription, want string) (bool, error) {
	if d == nil {
		return false, nil
	}
	switch d.TimeToLiveStatus {
	case types.TimeToLiveStatusEnabled, types.TimeToLiveStatusEnabling:
		if attr := aws.ToString(d.AttributeName); attr != want {
			return false, fmt.Errorf("%w: table %q has TTL on %q, but the key schema's TTLAttribute is %q; a table has one TTL attribute: "+
				"set KeySchema.TTLAttribute to %q (key records write epoch seconds there)", ErrTableSchema, table, attr, want, attr)
		}
		return true, nil
	}
	return false, nil
}

func describeTTL(ctx context.Context, client TableClient, table string) (*types.TimeToLiveDescription, error) {
	out, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &table})
	if err != nil {
		return nil, &StoreError{Op: "DescribeTimeToLive", Err: err}
	}
	return out.TimeToLiveDescription, nil
}
