package multiregion

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/backoff"
)

// strongCall runs call in the first region of rs, retrying
// ReplicatedWriteConflictException with bounded backoff, and moves on to
// the next region only while a region is unreachable. On an MRSC table every
// region sees every successful conditional write, so another region gives
// the same answer. The error after the last region is a *RegionError.
func strongCall[T any](ctx context.Context, s *Store, rs []*region, scope, key string, call func(*region) (T, error)) (T, error) {
	var zero T
	var err error
	tried := make([]string, 0, len(rs))
	for i, r := range rs {
		tried = append(tried, r.name)
		var v T
		v, err = retryConflicts(ctx, s, r, scope, key, func() (T, error) { return call(r) })
		if !unavailable(ctx, err) {
			if err == nil && i > 0 {
				s.observe(Event{Kind: EventRegionFallback, Scope: scope, Key: key, Region: r.name})
			}
			return v, err
		}
	}
	return zero, &RegionError{Regions: tried, Err: err}
}

// retryConflicts calls fn until it returns something other than a
// ReplicatedWriteConflictException, at most ConflictRetry.MaxAttempts
// times, sleeping a jittered exponential backoff in between. The SDK's
// default retryer does not retry this error.
func retryConflicts[T any](ctx context.Context, s *Store, r *region, scope, key string, fn func() (T, error)) (T, error) {
	o := s.opts.ConflictRetry
	for attempt := 0; ; attempt++ {
		v, err := fn()
		if err == nil || !isReplicatedWriteConflict(err) || attempt+1 >= o.MaxAttempts {
			return v, err
		}
		s.observe(Event{Kind: EventConflictRetry, Scope: scope, Key: key, Region: r.name, Err: err})
		if serr := backoff.Sleep(ctx, conflictBackoff(o, attempt)); serr != nil {
			return v, err
		}
	}
}

// isReplicatedWriteConflict reports whether err is DynamoDB's
// ReplicatedWriteConflictException: the item is being written by a request
// in another region of an MRSC table. Nothing was written; a retry is safe.
func isReplicatedWriteConflict(err error) bool {
	var rwc *types.ReplicatedWriteConflictException
	if errors.As(err, &rwc) {
		return true
	}
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "ReplicatedWriteConflictException"
}

func conflictBackoff(o RetryOptions, attempt int) time.Duration {
	return backoff.Jittered(o.BaseDelay, o.MaxDelay, attempt)
}

// strongClaimOrder returns the regions to commit or release c in: the
// region that made the claim first, then the others.
func (s *Store) strongClaimOrder(c *dynamostore.Claim) ([]*region, error) {
	if c == nil || c.Record == nil {
		return nil, fmt.Errorf("%w: no claim", dynamostore.ErrInvalidRequest)
	}
	first := s.byName[c.Record.Region]
	if first == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownRegion, c.Record.Region)
	}
	out := []*region{first}
	for _, r := range s.regions {
		if r != first {
			out = append(out, r)
		}
	}
	return out, nil
}

// describer is the call with which Strong mode checks that the table is
// MRSC. *dynamodb.Client has it.
type describer interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// tableCheck remembers the answer of Strong mode's check of the table.
type tableCheck struct {
	mu   sync.Mutex
	done bool
	err  error // the refusal, once the table was described as not MRSC
}

// strongTable checks, once per Store, that the table is MRSC: a
// DescribeTable in the first region of the Store's order that answers.
// A table described as anything else is refused for good (a *ConfigError
// matching ErrNotStrongTable); when no region answers, the call fails with
// a *RegionError and the next call checks again.
func (s *Store) strongTable(ctx context.Context) error {
	c := &s.mrsc
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return c.err
	}
	table := s.local.store.Table()
	var tried []string
	var last error
	for _, r := range s.order("", "") {
		tried = append(tried, r.name)
		out, err := r.store.Client().(describer).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table})
		if err != nil {
			err = &dynamostore.StoreError{Op: "DescribeTable", Err: err}
			if unavailable(ctx, err) {
				last = err
				continue
			}
			return err
		}
		c.done = true
		var got types.MultiRegionConsistency
		if out.Table != nil {
			got = out.Table.MultiRegionConsistency
		}
		if got != types.MultiRegionConsistencyStrong {
			c.err = &ConfigError{Mode: Strong, Field: "Mode", Err: ErrNotStrongTable,
				Reason: "DescribeTable in " + r.name + " answers MultiRegionConsistency " + strconv.Quote(string(got)) + " for table " + strconv.Quote(table) +
					", not STRONG: conditional writes in two of its regions are not checked against each other. " +
					"Create the table as an MRSC global table (replicas with MultiRegionConsistency STRONG), or serve this table in HomeRegion mode"}
		}
		return c.err
	}
	return &RegionError{Regions: tried, Err: last}
}
