package localstack

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
)

// inFlight serves h and records the most requests it had in flight at
// once since arm. After arm, the next request waits (half a second at
// most) for another to arrive while it is in flight, so that requests
// that can overlap do.
type inFlight struct {
	h        http.Handler
	now, max atomic.Int64

	mu      sync.Mutex
	hold    bool
	overlap chan struct{} // closed when two requests were in flight
}

func (f *inFlight) arm() {
	f.mu.Lock()
	f.max.Store(0)
	f.hold, f.overlap = true, make(chan struct{})
	f.mu.Unlock()
}

func (f *inFlight) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := f.now.Add(1)
	defer f.now.Add(-1)
	for m := f.max.Load(); n > m && !f.max.CompareAndSwap(m, n); m = f.max.Load() {
	}
	f.mu.Lock()
	held, overlap := f.hold, f.overlap
	f.hold = false
	if n > 1 && overlap != nil {
		select {
		case <-overlap:
		default:
			close(overlap)
		}
	}
	f.mu.Unlock()
	if held {
		select {
		case <-overlap:
		case <-time.After(500 * time.Millisecond):
		}
	}
	f.h.ServeHTTP(w, r)
}

// concurrentCalls makes 16 concurrent DescribeTable calls with c, the
// first of which srv holds.
func concurrentCalls(t *testing.T, c *dynamodb.Client, srv *inFlight) {
	createTable(t, c, "t", "")
	srv.arm()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("t")}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

func TestLoopbackExternalEndpointGetsOneRequestAtATime(t *testing.T) {
	// The emulator's own handler, served as an external endpoint on
	// loopback (as moto is), behind a counter of requests in flight.
	srv := &inFlight{h: NewHandler()}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	t.Setenv(EndpointEnv, ts.URL)
	ep, err := Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	if ep.Embedded {
		t.Fatal("want the external endpoint")
	}
	concurrentCalls(t, ep.Client, srv)
	if m := srv.max.Load(); m != 1 {
		t.Errorf("%d requests in flight at once; want 1", m)
	}

	// A client with an HTTP client of its own (as fault injectors have)
	// waits for the endpoint's other clients all the same.
	own := ep.NewClient(func(o *dynamodb.Options) { o.HTTPClient = &http.Client{} })
	srv.arm()
	var wg sync.WaitGroup
	for _, c := range []*dynamodb.Client{ep.Client, own, own, dynamodb.NewFromConfig(ep.Config())} {
		wg.Go(func() {
			if _, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("t")}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if m := srv.max.Load(); m != 1 {
		t.Errorf("%d requests in flight at once across clients; want 1", m)
	}
}

func TestWaitingForTheTurnStopsWhenTheContextIsDone(t *testing.T) {
	srv := httptest.NewServer(NewHandler())
	defer srv.Close()
	t.Setenv(EndpointEnv, srv.URL)
	ep, err := Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	blocked := make(chan struct{})
	release := make(chan struct{})
	// A first request is held inside the turn by a middleware of its own.
	holder := ep.NewClient(func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("hold",
				func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
					close(blocked)
					<-release
					return next.HandleDeserialize(ctx, in)
				}), middleware.After)
		})
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = holder.ListTables(context.Background(), &dynamodb.ListTablesInput{})
	}()
	<-blocked
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = ep.Client.ListTables(ctx, &dynamodb.ListTablesInput{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ListTables while another request holds the turn: %v; want its context's deadline", err)
	}
	close(release)
	<-done
}
