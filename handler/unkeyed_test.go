package handler_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/txn"
)

// stageEffect stages one effect item named id on the request's Tx; it
// fails the test when there is no Tx.
func (h *harness) stageEffect(r *http.Request, id string, cond string) {
	tx, ok := txn.FromContext(r.Context())
	if !assert.True(h.t, ok, "the handler of %s %s finds a Tx", r.Method, r.URL.Path) {
		return
	}
	p := types.Put{TableName: &h.effects, Item: map[string]types.AttributeValue{
		"id":  &types.AttributeValueMemberS{Value: id},
		"key": &types.AttributeValueMemberS{Value: "unkeyed"},
	}}
	if cond != "" {
		p.ConditionExpression = aws.String(cond)
	}
	tx.Put(p)
}

func TestUnguardedMethodCommitsItsStagedWritesInOneTransactionWithoutAKeyRecord(t *testing.T) {
	h := newHarness(t)
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		h.stageEffect(r, "get-1", "")
		h.stageEffect(r, "get-2", "")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "done")
	})
	h.calls.Reset()
	r := h.do(http.MethodGet, "/things", "", "")
	assert.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, "done", r.body)
	assert.Equal(t, 2, h.effectsFor("unkeyed"), "both staged writes were committed")
	assert.Equal(t, 1, h.calls.Count("TransactWriteItems"))
	assert.Equal(t, 1, h.calls.Total(), "one call: no claim, no key record")
	out, err := h.ep.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: &h.keys, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	assert.Empty(t, out.Items, "no key record")
}

func TestOptionalKeyLeftOutCommitsTheStagedWrites(t *testing.T) {
	h := newHarness(t, func(o *handler.Options) { o.Optional = true })
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		h.stageEffect(r, "post-1", "")
		w.WriteHeader(http.StatusCreated)
	})
	r := h.post("", `{"a":1}`)
	assert.Equal(t, http.StatusCreated, r.status, r.body)
	assert.Equal(t, 1, h.effectsFor("unkeyed"))
}

func TestUnguardedHandlerThatWritesNothingStillCommits(t *testing.T) {
	h := newHarness(t)
	h.setInner(func(w http.ResponseWriter, r *http.Request) { h.stageEffect(r, "silent", "") })
	r := h.do(http.MethodPut, "/things/1", "", "")
	assert.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, 1, h.effectsFor("unkeyed"))
}

func TestUnguardedServerErrorDiscardsTheStagedWrites(t *testing.T) {
	h := newHarness(t)
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		h.stageEffect(r, "failed", "")
		http.Error(w, "boom", http.StatusInternalServerError)
	})
	h.calls.Reset()
	r := h.do(http.MethodDelete, "/things/1", "", "")
	assert.Equal(t, http.StatusInternalServerError, r.status)
	assert.Zero(t, h.effectsFor("unkeyed"))
	assert.Zero(t, h.calls.Total(), "a 5xx answer commits nothing")
}

func TestUnguardedStagedConditionFailureAnswersInsteadOfTheHandler(t *testing.T) {
	h := newHarness(t)
	var writeErr error
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		h.stageEffect(r, "dup", "attribute_not_exists(id)")
		w.Header().Set("X-Handler", "yes")
		w.WriteHeader(http.StatusCreated)
		_, writeErr = io.WriteString(w, "created")
	})
	require.Equal(t, http.StatusCreated, h.do(http.MethodPut, "/things/dup", "", "").status)
	require.NoError(t, writeErr)
	r := h.do(http.MethodPut, "/things/dup", "", "")
	assert.Error(t, writeErr, "the handler learns that its response was not sent")
	assertProblem(t, r, http.StatusConflict, "effect-condition-failed")
	assert.Empty(t, r.header.Get("X-Handler"), "none of the dropped response's headers")
	assert.NotContains(t, r.body, "created")
	assert.Equal(t, 1, h.effectsFor("unkeyed"))
}

func TestUnguardedHandlerStreamsAfterItsCommit(t *testing.T) {
	h := newHarness(t)
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		h.stageEffect(r, "stream", "")
		_, _ = io.WriteString(w, "part 1;")
		assert.NoError(t, http.NewResponseController(w).Flush(), "an unguarded handler may flush")
		_, isFlusher := w.(http.Flusher)
		assert.True(t, isFlusher, "an unguarded handler's writer flushes as net/http's does")
		_, _ = io.WriteString(w, "part 2")
	})
	r := h.do(http.MethodGet, "/stream", "", "")
	assert.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, "part 1;part 2", r.body)
	assert.Equal(t, 1, h.effectsFor("unkeyed"))
}

func TestWritesStagedAfterTheUnguardedResponseBeganAreNotCommittedAndLogged(t *testing.T) {
	var logs syncBuffer
	h := newHarness(t, func(o *handler.Options) { o.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		h.stageEffect(r, "late", "")
	})
	r := h.do(http.MethodGet, "/late", "", "")
	assert.Equal(t, http.StatusOK, r.status)
	assert.Zero(t, h.effectsFor("unkeyed"))
	assert.Contains(t, logs.String(), "writes staged after the response began were not committed")
}

func TestGuardedHandlerCannotFlush(t *testing.T) {
	h := newHarness(t)
	var flushErr error
	var isFlusher bool
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		_, isFlusher = w.(http.Flusher)
		flushErr = http.NewResponseController(w).Flush()
		w.WriteHeader(http.StatusCreated)
	})
	r := h.post("flush-1", `{}`)
	assert.Equal(t, http.StatusCreated, r.status, r.body)
	assert.False(t, isFlusher, "a guarded handler's writer is no http.Flusher")
	assert.True(t, errors.Is(flushErr, http.ErrNotSupported), "ResponseController.Flush: %v", flushErr)
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
