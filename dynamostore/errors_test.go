package dynamostore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

// answering is an HTTP transport in front of the endpoint that answers
// every call with DynamoDB's error document for status and code, or with
// err when it is set, without sending it.
type answering struct {
	status int
	code   string
	err    error
}

func (a answering) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	if a.err != nil {
		return nil, a.err
	}
	body := fmt.Sprintf(`{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"answer for the test"}`, a.code)
	return &http.Response{
		StatusCode: a.status, Status: http.StatusText(a.status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: req,
	}, nil
}

func TestStoreErrorClassifiesDynamoDBAnswers(t *testing.T) {
	ep := localstack.ForTest(t)
	cases := []struct {
		answer answering
		class  dynamostore.Class
	}{
		{answering{status: 400, code: "ThrottlingException"}, ""},
		{answering{status: 400, code: "ProvisionedThroughputExceededException"}, ""},
		{answering{status: 400, code: "RequestLimitExceeded"}, ""},
		{answering{status: 400, code: "TransactionInProgressException"}, ""},
		{answering{status: 400, code: "TransactionConflictException"}, ""},
		{answering{status: 500, code: "InternalServerError"}, ""},
		{answering{status: 503, code: "ServiceUnavailable"}, ""},
		{answering{err: errors.New("connection refused")}, ""},
		{answering{status: 400, code: "ResourceNotFoundException"}, dynamostore.ClassMissingTable},
		{answering{status: 400, code: "AccessDeniedException"}, dynamostore.ClassAccessDenied},
		{answering{status: 400, code: "UnrecognizedClientException"}, dynamostore.ClassAccessDenied},
		{answering{status: 400, code: "ValidationException"}, dynamostore.ClassInvalidWrite},
		{answering{status: 400, code: "SomeFutureClientException"}, dynamostore.ClassRejected},
	}
	for _, tc := range cases {
		name := tc.answer.code
		if tc.answer.err != nil {
			name = "network error"
		}
		c := ep.NewClient(func(o *dynamodb.Options) {
			o.HTTPClient = &http.Client{Transport: tc.answer}
			o.RetryMaxAttempts = 1
		})
		store := dynamostore.New(c, "keys")
		_, err := store.Claim(context.Background(), request("k", "{}"))
		var se *dynamostore.StoreError
		require.ErrorAs(t, err, &se, name)
		assert.Equal(t, tc.class, se.Class(), name)
		assert.Equal(t, tc.class == "", se.Temporary(), name)
		assert.Equal(t, tc.class, dynamostore.ClassOf(fmt.Errorf("wrapped: %w", err)), name)
		assert.Equal(t, "keys", se.Table, name)
	}
}

// The DynamoDB endpoint's own answer for a table that does not exist.
func TestMissingTableIsClassMissingTable(t *testing.T) {
	ep := localstack.ForTest(t)
	store := dynamostore.New(ep.Client, localstack.TableName("absent"))
	_, err := store.Claim(context.Background(), request("k", "{}"))
	var se *dynamostore.StoreError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, dynamostore.ClassMissingTable, se.Class())
	assert.False(t, se.Temporary())
}

func TestClassOfTransactionErrors(t *testing.T) {
	reasons := func(codes ...string) []types.CancellationReason {
		var rs []types.CancellationReason
		for _, c := range codes {
			rs = append(rs, types.CancellationReason{Code: aws.String(c)})
		}
		return rs
	}
	cases := []struct {
		err   error
		class dynamostore.Class
	}{
		{fmt.Errorf("%w: 101 actions", txn.ErrTooManyActions), dynamostore.ClassTooManyActions},
		{&txn.ValidationError{Index: 0, Message: "Missing the key id in the item"}, dynamostore.ClassInvalidWrite},
		{&txn.CanceledError{Reasons: reasons("None", "ItemCollectionSizeLimitExceeded")}, dynamostore.ClassInvalidWrite},
		{&txn.CanceledError{Reasons: reasons("None", "ThrottlingError", "TransactionConflict")}, ""},
		{&txn.ConflictError{Attempts: 4}, ""},
		{&txn.ConditionFailedError{Index: 0}, ""},
		{dynamostore.ErrLockLost, ""},
		{errors.New("the function's own"), ""},
		{nil, ""},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.class, dynamostore.ClassOf(tc.err), "%v", tc.err)
	}
}
