package grpc_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
	idemgrpc "github.com/idemkey/idemkey/grpc"
	"github.com/idemkey/idemkey/grpc/internal/testpb"
)

// recorder keeps the events an observer receives.
type recorder struct {
	mu     sync.Mutex
	events []idemkey.Event
}

func (r *recorder) Observe(_ context.Context, e idemkey.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func TestObserverEventsNameTheGRPCFrontDoor(t *testing.T) {
	var rec recorder
	h := newHarness(t, func(s *setup) {
		s.server = append(s.server, func(o *idemgrpc.Options) { o.Guard.Observer = &rec })
	})
	c := h.dial("alice")
	req := &testpb.ChargeRequest{Account: "acc", Cents: 5}
	require.NoError(t, h.charge(c, "obs-1", req).err)
	require.NoError(t, h.charge(c, "obs-1", req).err)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.events, 2)
	for _, e := range rec.events {
		assert.Equal(t, idemkey.FrontDoorGRPC, e.FrontDoor)
	}
	assert.Equal(t, idemkey.OutcomeReplay, rec.events[1].Outcome)
}
