package regionsim

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowReads holds every GetItem past the library's default topology read
// timeout, in real time, as a loaded machine can.
type slowReads struct{}

func (slowReads) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".GetItem") {
		select {
		case <-time.After(2100 * time.Millisecond):
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

func TestASlowMachineDoesNotMakeARegionUnreachable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSim(Scenario{NoOutage: true}.withDefaults(), Home)
	cluster, err := Start(ctx, func(o *Options) { o.Clock = s.clock.Now })
	require.NoError(t, err)
	defer cluster.Close()
	s.cluster = cluster
	require.NoError(t, s.setup(ctx))
	for _, r := range cluster.Regions() {
		r.raw.Transport = slowReads{}
	}
	o := &op{scope: "tenant-0", key: "op-00000", body: `{"amount":1}`, region: []int{0}}
	assert.Equal(t, http.StatusCreated, s.send(&attempt{op: o}), "the topology reads took 2.1 s of real time and no virtual time")
	assert.Equal(t, 1, s.res.Executions)
}
