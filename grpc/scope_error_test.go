package grpc_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	idemgrpc "github.com/idemkey/idemkey/grpc"
	"github.com/idemkey/idemkey/grpc/internal/testpb"
)

// A Scope function's error tells how the service authenticates: the
// client's status carries a fixed message, the operator's log the error.
func TestScopeErrorIsLoggedAndNotSentToTheClient(t *testing.T) {
	const secret = "token of kid-7 not signed by https://idp.internal.example"
	var log bytes.Buffer
	h := newHarness(t, func(s *setup) {
		s.server = append(s.server, func(o *idemgrpc.Options) {
			o.Scope = func(context.Context) (string, error) { return "", errors.New(secret) }
			o.Logger = slog.New(slog.NewJSONHandler(&log, nil))
		})
	})
	a := h.charge(h.dial("alice"), "k1", &testpb.ChargeRequest{Account: "acc"})
	require.Error(t, a.err)
	assert.Equal(t, codes.Unauthenticated, a.code())
	assert.Equal(t, idemgrpc.ReasonUnauthorized, a.reason())
	msg := status.Convert(a.err).Message()
	assert.NotContains(t, msg, "kid-7")
	assert.NotContains(t, msg, "idp.internal")
	assert.Contains(t, log.String(), secret)
	assert.Contains(t, log.String(), `"level":"WARN"`)
	assert.Zero(t, h.svc.executed.Load())
}
