package lambda

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/internal/emf"
)

// MetricsNamespace is the default CloudWatch namespace of Metrics, the
// one the sweeper (cmd/sweeper) publishes in.
const MetricsNamespace = "idemkey"

// MetricsOptions configure Metrics. The zero value of each field selects
// its default.
type MetricsOptions struct {
	// Namespace is the CloudWatch namespace (default MetricsNamespace).
	Namespace string
	// FunctionName is the value of the metrics' one dimension,
	// FunctionName (default lambdacontext.FunctionName, the function's
	// name in Lambda; no dimension when that is empty too).
	FunctionName string
	// Now is the clock of the lines' timestamps (default time.Now).
	Now func() time.Time
}

// Metrics is an idemkey.Observer that publishes the request metrics of
// each invocation as one CloudWatch Embedded Metric Format line written
// to its writer (a Lambda function's stdout, which CloudWatch Logs turns
// into metrics without any API call). Set it as the Guard's Observer
// (handler.Options.Guard.Observer, FuncOptions.Guard.Observer), alone or
// with others (idemkey.Observers).
//
// The front doors of this package (NewAPIGatewayV1, NewAPIGatewayV2,
// NewALB, NewFunctionURL, Idempotent, SQSBatch) mark each invocation, and
// Metrics writes one line when it ends with what its requests did: one
// line per HTTP request, one per SQS batch whatever its size. A request
// outside any invocation (the middleware served by net/http) gets a line
// of its own. An invocation whose requests never reach the Guard (a 400
// for a missing key, an unguarded GET without writes) writes none.
//
// A line's metrics, all with the dimension FunctionName: Requests (the
// requests counted), one count per outcome named in CamelCase
// (ExecutedStored, ExecutedReleased, Replay, ReplayFromCache, InFlight,
// Mismatch, LockLost, Unavailable, Permanent, EffectConditionFailed,
// Invalid, CorruptRecord, UnkeyedCommitted, Error), every one written,
// zeros included, so that a rate alarm always has data; StoreCalls and
// StagedActions (sums); ClaimDuration, RunDuration and CommitDuration in
// milliseconds, written when a request of the invocation went through
// that phase: the request's own for an HTTP invocation, the longest of
// the batch's for SQS. Its properties: FrontDoor and Mode (of the last
// request), and the classes of permanent faults (PermanentClasses). Never
// a key, a scope or a body.
//
// A failed write is dropped: metrics never fail an invocation. Metrics is
// safe for concurrent use.
type Metrics struct {
	w    io.Writer
	opts MetricsOptions
	mu   sync.Mutex // one line at a time
}

// NewMetrics returns Metrics writing to w. It panics if w is nil, or if
// the namespace or the function name is not valid in CloudWatch.
func NewMetrics(w io.Writer, optFns ...func(*MetricsOptions)) *Metrics {
	if w == nil {
		panic("lambda: NewMetrics needs a writer")
	}
	m := &Metrics{w: w}
	for _, fn := range optFns {
		fn(&m.opts)
	}
	if m.opts.Namespace == "" {
		m.opts.Namespace = MetricsNamespace
	}
	if m.opts.FunctionName == "" {
		m.opts.FunctionName = lambdacontext.FunctionName
	}
	if m.opts.Now == nil {
		m.opts.Now = time.Now
	}
	if _, err := emf.Encode(m.document(&tally{})); err != nil {
		panic(fmt.Sprintf("lambda: NewMetrics: %v", err))
	}
	return m
}

// metricOutcomes lists the outcomes in the order a line holds them, with
// their metric names.
var metricOutcomes = []struct {
	outcome idemkey.Outcome
	name    string
}{
	{idemkey.OutcomeExecutedStored, "ExecutedStored"},
	{idemkey.OutcomeExecutedReleased, "ExecutedReleased"},
	{idemkey.OutcomeReplay, "Replay"},
	{idemkey.OutcomeReplayFromCache, "ReplayFromCache"},
	{idemkey.OutcomeInFlight, "InFlight"},
	{idemkey.OutcomeMismatch, "Mismatch"},
	{idemkey.OutcomeLockLost, "LockLost"},
	{idemkey.OutcomeUnavailable, "Unavailable"},
	{idemkey.OutcomePermanent, "Permanent"},
	{idemkey.OutcomeEffectConditionFailed, "EffectConditionFailed"},
	{idemkey.OutcomeInvalid, "Invalid"},
	{idemkey.OutcomeCorruptRecord, "CorruptRecord"},
	{idemkey.OutcomeUnkeyedCommitted, "UnkeyedCommitted"},
	{idemkey.OutcomeError, "Error"},
}

// tally is what the requests of one invocation did, for one Metrics.
type tally struct {
	requests, storeCalls, staged int
	outcomes                     [14]int // by index in metricOutcomes
	claim, run, commit           time.Duration
	phases                       idemkey.Phase
	frontDoor, mode              string
	classes                      []string
}

func (t *tally) add(e *idemkey.Event) {
	t.requests++
	t.storeCalls += e.StoreCalls
	t.staged += e.StagedActions
	for i, o := range metricOutcomes {
		if o.outcome == e.Outcome {
			t.outcomes[i]++
		}
	}
	t.phases |= e.Phases
	t.claim, t.run, t.commit = max(t.claim, e.Claim), max(t.run, e.Run), max(t.commit, e.Commit)
	t.frontDoor, t.mode = e.FrontDoor, e.Mode.String()
	if e.Class != "" {
		t.classes = append(t.classes, string(e.Class))
	}
}

// Observe adds e to its invocation's line, or writes a line for e alone
// outside an invocation.
func (m *Metrics) Observe(ctx context.Context, e idemkey.Event) {
	inv, ok := ctx.Value(invocationKey{}).(*invocation)
	if !ok {
		var t tally
		t.add(&e)
		m.write(&t)
		return
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	for i := range inv.tallies {
		if inv.tallies[i].m == m {
			inv.tallies[i].t.add(&e)
			return
		}
	}
	inv.tallies = append(inv.tallies, metricsTally{m: m})
	inv.tallies[len(inv.tallies)-1].t.add(&e)
}

// document returns the EMF document of t.
func (m *Metrics) document(t *tally) emf.Document {
	d := emf.Document{Namespace: m.opts.Namespace, Timestamp: m.opts.Now()}
	if m.opts.FunctionName != "" {
		d.Dimensions = []emf.Dimension{{Name: "FunctionName", Value: m.opts.FunctionName}}
	}
	d.Metrics = append(d.Metrics, emf.Metric{Name: "Requests", Value: float64(t.requests), Unit: emf.Count})
	for i, o := range metricOutcomes {
		d.Metrics = append(d.Metrics, emf.Metric{Name: o.name, Value: float64(t.outcomes[i]), Unit: emf.Count})
	}
	d.Metrics = append(d.Metrics,
		emf.Metric{Name: "StoreCalls", Value: float64(t.storeCalls), Unit: emf.Count},
		emf.Metric{Name: "StagedActions", Value: float64(t.staged), Unit: emf.Count})
	ms := func(v time.Duration) float64 { return float64(v.Microseconds()) / 1000 }
	for _, p := range []struct {
		phase idemkey.Phase
		name  string
		v     time.Duration
	}{{idemkey.PhaseClaim, "ClaimDuration", t.claim}, {idemkey.PhaseRun, "RunDuration", t.run}, {idemkey.PhaseCommit, "CommitDuration", t.commit}} {
		if t.phases&p.phase != 0 {
			d.Metrics = append(d.Metrics, emf.Metric{Name: p.name, Value: ms(p.v), Unit: emf.Milliseconds})
		}
	}
	d.Properties = map[string]any{"FrontDoor": t.frontDoor, "Mode": t.mode}
	if len(t.classes) > 0 {
		d.Properties["PermanentClasses"] = t.classes
	}
	return d
}

func (m *Metrics) write(t *tally) {
	b, err := emf.Encode(m.document(t))
	if err != nil {
		return // NewMetrics checked the namespace and the dimension: not reached
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, _ = m.w.Write(append(b, '\n'))
}

// invocation gathers the tallies of one Lambda invocation, one per Metrics
// that observed a request of it.
type invocation struct {
	mu      sync.Mutex
	tallies []metricsTally
}

type metricsTally struct {
	m *Metrics
	t tally
}

type invocationKey struct{}

// beginInvocation marks ctx as one invocation, unless it already is one
// (an SQS batch's records), and returns the function that ends it: it
// writes the line of every Metrics that observed a request.
func beginInvocation(ctx context.Context) (context.Context, func()) {
	if _, ok := ctx.Value(invocationKey{}).(*invocation); ok {
		return ctx, func() {}
	}
	inv := &invocation{}
	return context.WithValue(ctx, invocationKey{}, inv), func() {
		inv.mu.Lock()
		defer inv.mu.Unlock()
		for i := range inv.tallies {
			inv.tallies[i].m.write(&inv.tallies[i].t)
		}
		inv.tallies = nil
	}
}
