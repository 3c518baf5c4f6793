package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/keyschema"
)

// exampleScopeRule says where the scope that scope prints comes from.
const exampleScopeRule = "idemctl scope: the scope examples/payments gives this bearer token: " +
	"the first 16 bytes of the SHA-256 of the token, in hex. It is that example's rule; " +
	"a service of your own scopes keys by whatever its handler.Options.Scope returns."

// exampleScope is the scope examples/payments gives the caller whose
// Authorization header is "Bearer <token>": its owner id, a hash so that
// no table holds tokens.
func exampleScope(token string) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return hex.EncodeToString(sum[:16])
}

func scope(_ context.Context, c *command) int {
	bearer := c.flags.String("bearer", "", "the bearer token of the caller (what follows \"Authorization: Bearer \"; required)")
	if code, ok := c.parse(); !ok {
		return code
	}
	if strings.TrimSpace(*bearer) == "" {
		return c.usageError("-bearer is required")
	}
	fmt.Fprintln(c.stdout, exampleScope(*bearer))
	fmt.Fprintln(c.stderr, exampleScopeRule)
	return exitOK
}

// Defaults and bounds of list.
const (
	defaultListLimit = 100
	listPageSize     = 1000
)

// listJSON is what list prints.
type listJSON struct {
	Table string        `json:"table"`
	Scope string        `json:"scope"`
	Keys  []listKeyJSON `json:"keys"`
	// Scanned is the number of items the Scan read, the listing's cost.
	Scanned int64 `json:"scanned"`
	// Truncated is set when list stopped at -limit or -max-scanned before
	// the end of the table: the scope may hold more live keys.
	Truncated bool `json:"truncated"`
}

type listKeyJSON struct {
	Key     string    `json:"key"`
	State   string    `json:"state"`
	Method  string    `json:"method"`
	Path    string    `json:"path"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	Status  int       `json:"status,omitempty"`
}

func list(ctx context.Context, c *command) int {
	scopeFlag := c.flags.String("scope", "", "the scope to list (tenant, API key id; see idemctl scope); may be empty")
	limit := c.flags.Int("limit", defaultListLimit, "list at most this many live keys")
	maxScanned := c.flags.Int64("max-scanned", 0, "stop after the Scan has read this many items (0: no bound; "+
		"the key table has no index by scope, so the Scan reads every item until -limit keys are found)")
	if code, ok := c.parse(); !ok {
		return code
	}
	if *limit < 1 {
		return c.usageError("-limit must be positive")
	}
	if *maxScanned < 0 {
		return c.usageError("-max-scanned must not be negative")
	}
	client, err := c.client(ctx)
	if err != nil {
		return c.fail("%v", err)
	}
	out, err := listScope(ctx, client, c.table, c.schema, *scopeFlag, *limit, *maxScanned)
	if err != nil {
		return c.storeFail(err)
	}
	if code := c.printJSON(out); code != exitOK {
		return code
	}
	if out.Truncated {
		fmt.Fprintf(c.stderr, "idemctl list: stopped after %d keys and %d items scanned; the scope may hold more (raise -limit or -max-scanned)\n",
			len(out.Keys), out.Scanned)
	}
	return exitOK
}

// listScope scans table for the partition keys of scope (they all begin
// with the same prefix) and reads each one's live record with the store,
// which leaves out expired ones.
func listScope(ctx context.Context, client *dynamodb.Client, table string, schema dynamostore.KeySchema, scope string, limit int, maxScanned int64) (*listJSON, error) {
	store := dynamostore.New(client, table, func(o *dynamostore.Options) { o.Schema = schema })
	ks := keyschema.Schema(store.Options().Schema)
	prefix := ks.Value(scope, "")
	out := &listJSON{Table: table, Scope: scope, Keys: []listKeyJSON{}}
	projection, names := ks.KeyProjection()
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(table),
		ProjectionExpression:      aws.String(projection),
		FilterExpression:          aws.String("begins_with(#pk, :prefix)"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: map[string]types.AttributeValue{":prefix": &types.AttributeValueMemberS{Value: prefix}},
	}
	for {
		page := int64(listPageSize)
		if maxScanned > 0 {
			page = min(page, maxScanned-out.Scanned)
		}
		in.Limit = aws.Int32(int32(page))
		resp, err := client.Scan(ctx, in)
		if err != nil {
			return nil, &dynamostore.StoreError{Op: "Scan", Err: err}
		}
		out.Scanned += int64(max(resp.ScannedCount, resp.Count))
		for i, item := range resp.Items {
			pk, ok := ks.InNamespace(item)
			if !ok || !strings.HasPrefix(pk, prefix) {
				continue
			}
			rec, err := store.Get(ctx, scope, strings.TrimPrefix(pk, prefix))
			if errors.Is(err, dynamostore.ErrNotFound) {
				continue // expired, or deleted since the Scan
			}
			if err != nil {
				return nil, err
			}
			k := listKeyJSON{Key: rec.Key, State: string(rec.State), Method: rec.Method, Path: rec.Path,
				Created: rec.Created.UTC(), Expires: rec.Expires.UTC()}
			if rec.Response != nil {
				k.Status = rec.Response.Status
			}
			out.Keys = append(out.Keys, k)
			if len(out.Keys) == limit {
				out.Truncated = i < len(resp.Items)-1 || resp.LastEvaluatedKey != nil
				return out, nil
			}
		}
		if resp.LastEvaluatedKey == nil {
			return out, nil
		}
		if maxScanned > 0 && out.Scanned >= maxScanned {
			out.Truncated = true
			return out, nil
		}
		in.ExclusiveStartKey = resp.LastEvaluatedKey
	}
}
