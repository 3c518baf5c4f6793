package regionsim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/multiregion"
	"github.com/idemkey/idemkey/txn"
)

// Mode is how the services of a scenario guard their requests.
type Mode string

const (
	// Naive: every region guards with its own local dynamostore.Store on
	// the global table, as a careless user would.
	Naive Mode = "naive"
	// Home: a multiregion.Store in HomeRegion mode, failing closed.
	Home Mode = "home"
	// HomeFailover: HomeRegion mode with Failover, and Reconcile once the
	// scenario has settled.
	HomeFailover Mode = "home-failover"
	// Strong: a multiregion.Store in Strong mode over a shared emulator (a
	// model of an MRSC table: one linearizable copy, so nothing to
	// replicate), with effects keyed by the idempotency key.
	Strong Mode = "strong"
)

// Modes are the modes a simulation runs by default, in order.
var Modes = []Mode{Naive, Home, HomeFailover, Strong, HomeTopologyChange}

// ParseMode returns the mode named s.
func ParseMode(s string) (Mode, error) {
	for _, m := range slices.Concat(Modes, FenceModes, CombinedModes) {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("regionsim: unknown mode %q", s)
}

// Scenario is a seeded workload. The zero value of each field selects its
// default.
//
// Each logical operation has one idempotency key and one body. Its client
// sends it to a region drawn at random (its local region) at a time drawn
// uniformly in [0, Span). Each attempt's answer is lost with probability
// LossRate, after the server executed it; the client then retries, after a
// delay drawn in [RetryMin, RetryMax], into another region drawn at random.
// It also retries after 409 and 5xx, and gives up after MaxAttempts. The
// draws of each operation come from its own generator, seeded by Seed and
// the operation's index, so every mode sees the same schedule. From
// OutageStart to OutageEnd the region OutageRegion is cut off: its
// DynamoDB cannot be reached by anyone and replication to and from it is
// held. Time is virtual: requests take no time, and replication is applied
// between requests once Lag has passed.
type Scenario struct {
	Seed uint64
	// Ops is the number of logical operations (default 200).
	Ops int
	// Regions (default DefaultRegions).
	Regions []string
	// Lag is the replication lag (default 2s; negative: none).
	Lag time.Duration
	// Span is the period over which operations start (default 10s).
	Span time.Duration
	// LossRate is the probability that an attempt's answer is lost after
	// the server executed it (default 0.4; negative: never).
	LossRate float64
	// RetryMin and RetryMax bound a client's delay before retrying
	// (default 100ms and 1.5s).
	RetryMin, RetryMax time.Duration
	// MaxAttempts bounds the attempts of one operation (default 12).
	MaxAttempts int
	// OutageRegion is cut off from OutageStart to OutageEnd (default: the
	// first region, from 4s to 7s). NoOutage disables the outage.
	OutageRegion           string
	OutageStart, OutageEnd time.Duration
	NoOutage               bool
}

func (sc Scenario) withDefaults() Scenario {
	if sc.Ops <= 0 {
		sc.Ops = 200
	}
	if len(sc.Regions) == 0 {
		sc.Regions = DefaultRegions
	}
	switch {
	case sc.Lag == 0:
		sc.Lag = 2 * time.Second
	case sc.Lag < 0:
		sc.Lag = 0
	}
	if sc.Span <= 0 {
		sc.Span = 10 * time.Second
	}
	switch {
	case sc.LossRate == 0:
		sc.LossRate = 0.4
	case sc.LossRate < 0:
		sc.LossRate = 0
	}
	if sc.RetryMin <= 0 {
		sc.RetryMin = 100 * time.Millisecond
	}
	if sc.RetryMax < sc.RetryMin {
		sc.RetryMax = max(sc.RetryMin, 1500*time.Millisecond)
	}
	if sc.MaxAttempts <= 0 {
		sc.MaxAttempts = 12
	}
	if sc.OutageRegion == "" {
		sc.OutageRegion = sc.Regions[0]
	}
	if sc.OutageStart == 0 && sc.OutageEnd == 0 {
		sc.OutageStart, sc.OutageEnd = 4*time.Second, 7*time.Second
	}
	return sc
}

// Result counts what happened in one mode.
type Result struct {
	Mode Mode
	// Requests is the number of HTTP requests the services answered.
	Requests int
	// LogicalOps is the number of logical operations.
	LogicalOps int
	// Duplicates is the number of operations whose effect was executed more
	// than once: with more than one effect item across all regions once
	// replication has settled (Strong: more than one execution of the
	// handler, since keyed effects cannot be counted twice).
	Duplicates int
	// Unavailable is the number of requests answered 503.
	Unavailable int
	// Completed and Abandoned count operations whose client got a final
	// answer, and those that gave up after MaxAttempts.
	Completed, Abandoned int
	// Executions is the number of handler executions.
	Executions int
	// Failovers and FenceReported are HomeFailover's failover decisions and
	// the keys Reconcile reported as executed in two regions.
	Failovers, FenceReported int
	// DuplicatesInLagWindow counts duplicates whose first execution was in
	// the outage region, for a key homed there, within Lag before the
	// outage began: the window the failover risk is stated for.
	DuplicatesInLagWindow int
	// DuplicateKeys and FenceKeys are "scope/key" of the duplicates and of
	// the fence reports, sorted.
	DuplicateKeys, FenceKeys []string
	// Leftover counts, in mode home-region-removed, the records written
	// by the removed region that the remaining regions' replicas still
	// hold once every record expired and the remaining regions swept.
	Leftover int
}

// Line is the result in the form the script prints.
func (r *Result) Line() string {
	return fmt.Sprintf("mode=%s requests=%d logical_ops=%d duplicates=%d unavailable=%d",
		r.Mode, r.Requests, r.LogicalOps, r.Duplicates, r.Unavailable)
}

// op is one logical operation and its whole schedule.
type op struct {
	index      int
	scope, key string
	body       string
	start      time.Duration
	region     []int // region of each attempt
	lost       []bool
	delay      []time.Duration // after each attempt, before the next
}

func (o *op) id() string { return o.scope + "/" + o.key }

func plan(sc Scenario) []*op {
	n := len(sc.Regions)
	ops := make([]*op, sc.Ops)
	for i := range ops {
		rng := rand.New(rand.NewPCG(sc.Seed, uint64(i)+1))
		o := &op{
			index: i,
			scope: "tenant-" + strconv.Itoa(rng.IntN(8)),
			key:   fmt.Sprintf("op-%05d", i),
			body:  fmt.Sprintf(`{"amount":%d,"currency":"EUR"}`, 100+rng.IntN(9900)),
			start: time.Duration(rng.Int64N(int64(sc.Span))),
		}
		r := rng.IntN(n)
		for range sc.MaxAttempts {
			o.region = append(o.region, r)
			o.lost = append(o.lost, rng.Float64() < sc.LossRate)
			o.delay = append(o.delay, sc.RetryMin+time.Duration(rng.Int64N(int64(sc.RetryMax-sc.RetryMin)+1)))
			if n > 1 {
				r = (r + 1 + rng.IntN(n-1)) % n
			}
		}
		ops[i] = o
	}
	return ops
}

// attempt is a scheduled request.
type attempt struct {
	at  time.Duration
	seq int
	op  *op
	n   int
}

// Epoch is the virtual time at which every scenario begins.
var Epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	keysTable    = "idemkey-keys"
	effectsTable = "effects"
)

// sim is one mode's run of a scenario.
type sim struct {
	sc       Scenario
	mode     Mode
	clock    *ddbtest.Clock
	cluster  *Cluster
	services []http.Handler
	routers  []*multiregion.Store
	counters multiregion.Counters
	res      Result
	execs    map[string]int // Strong: handler executions per operation
	// before, when set, runs before each attempt at its virtual time; route,
	// when set, chooses the service of an attempt (scenario_topology.go).
	before func(ctx context.Context, at time.Duration) error
	route  func(a *attempt) http.Handler
}

func newSim(sc Scenario, mode Mode) *sim {
	return &sim{sc: sc, mode: mode, clock: ddbtest.NewClock(Epoch), execs: map[string]int{}, res: Result{Mode: mode}}
}

// Run runs sc in mode on a new cluster and returns its counts.
func Run(ctx context.Context, mode Mode, sc Scenario) (*Result, error) {
	if episode := episodes[mode]; episode != nil {
		return runFence(ctx, mode, sc, episode) // scenario_fence.go
	}
	if mode == HomeTopologyChange {
		return runTopologyChange(ctx, sc)
	}
	sc = sc.withDefaults()
	if slices.Index(sc.Regions, sc.OutageRegion) < 0 {
		return nil, fmt.Errorf("regionsim: outage region %q is not a region", sc.OutageRegion)
	}
	s := newSim(sc, mode)
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	defer s.cluster.Close()
	if err := s.setup(ctx); err != nil {
		return nil, err
	}
	return s.play(ctx)
}

// start starts the cluster of the scenario's regions on the virtual clock,
// shared in mode Strong.
func (s *sim) start(ctx context.Context) error {
	c, err := Start(ctx, func(o *Options) {
		o.Regions = s.sc.Regions
		o.Lag = s.sc.Lag
		o.Clock = s.clock.Now
		o.Shared = s.mode == Strong
	})
	s.cluster = c
	return err
}

// play runs the schedule, settles and counts.
func (s *sim) play(ctx context.Context) (*Result, error) {
	if err := s.run(ctx); err != nil {
		return nil, err
	}
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	if err := s.count(ctx); err != nil {
		return nil, err
	}
	return &s.res, nil
}

// createTables creates the key table and the effects table, global.
func (s *sim) createTables(ctx context.Context) error {
	if err := s.cluster.CreateGlobalTable(ctx, keysTable, dynamostore.PartitionKey); err != nil {
		return err
	}
	return s.cluster.CreateGlobalTable(ctx, effectsTable, "id")
}

func (s *sim) setup(ctx context.Context) error {
	if err := s.createTables(ctx); err != nil {
		return err
	}
	storeOpts := func(o *dynamostore.Options) { o.Now = s.clock.Now }
	var regions []multiregion.Region
	for _, r := range s.cluster.Regions() {
		regions = append(regions, multiregion.NewRegion(r.Name, r.Client, keysTable, storeOpts))
	}
	for i, r := range s.cluster.Regions() {
		var store idemkey.Store
		switch s.mode {
		case Naive:
			store = regions[i].Store
		case Home, HomeFailover, Strong:
			router, err := multiregion.New(regions, s.routerOptions, func(o *multiregion.Options) {
				o.Mode = multiregion.HomeRegion
				o.Failover = s.mode == HomeFailover
				if s.mode == Strong {
					o.Mode = multiregion.Strong
					o.Local = r.Name
					o.Effects = multiregion.EffectsKeyed
				}
			})
			if err != nil {
				return err
			}
			s.routers = append(s.routers, router)
			store = router
		default:
			return fmt.Errorf("regionsim: unknown mode %q", s.mode)
		}
		inner := s.mrecEffect(r)
		if s.mode == Strong {
			inner = s.keyedEffect(i)
		}
		s.services = append(s.services, service(store, inner))
	}
	return nil
}

// topologyReadTimeout replaces the wall-clock bound of a topology read:
// requests take no virtual time, so a slow machine must not turn a read
// into an unreachable region.
const topologyReadTimeout = time.Hour

// routerOptions are the options every process of every mode shares.
func (s *sim) routerOptions(o *multiregion.Options) {
	o.Eviction = multiregion.EvictBySweeper // nothing expires within a run but the fence scenarios'
	o.Observer = s.counters.Observe
	o.TopologyReadTimeout = topologyReadTimeout
}

// service is a process: handler over store, the tenant header as scope.
func service(store idemkey.Store, inner http.Handler) http.Handler {
	return handler.New(store, func(o *handler.Options) {
		o.Scope = func(req *http.Request) (string, error) { return req.Header.Get("X-Tenant"), nil }
	})(inner)
}

// mrecEffect is the service of region r on an MREC table: it stages one
// effect item per execution, named after the execution, and answers 201.
func (s *sim) mrecEffect(r *Region) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s.res.Executions++
		n := s.res.Executions
		tx, ok := txn.FromContext(req.Context())
		if !ok {
			http.Error(w, "no transaction", http.StatusInternalServerError)
			return
		}
		opID := req.Header.Get("X-Tenant") + "/" + req.Header.Get(handler.HeaderName)
		tx.Put(types.Put{TableName: aws.String(effectsTable), Item: map[string]types.AttributeValue{
			"id":      &types.AttributeValueMemberS{Value: opID + "#" + strconv.Itoa(n)},
			"op":      &types.AttributeValueMemberS{Value: opID},
			"arrived": &types.AttributeValueMemberS{Value: r.Name},
			"at":      &types.AttributeValueMemberN{Value: strconv.FormatInt(int64(s.clock.Now().Sub(Epoch)), 10)},
		}, ConditionExpression: aws.String("attribute_not_exists(id)")})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"execution":%d}`, n)
	})
}

// keyedEffect is the service of the i-th region on an MRSC table: it
// writes its effect itself, keyed by the idempotency key, with
// attribute_not_exists (through the first reachable region, as the store
// does), and counts its executions.
func (s *sim) keyedEffect(i int) http.Handler {
	regions := s.cluster.Regions()
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s.res.Executions++
		opID := req.Header.Get("X-Tenant") + "/" + req.Header.Get(handler.HeaderName)
		s.execs[opID]++
		var err error
		for j := range regions {
			r := regions[(i+j)%len(regions)]
			_, err = r.Client.PutItem(req.Context(), &dynamodb.PutItemInput{
				TableName: aws.String(effectsTable),
				Item: map[string]types.AttributeValue{
					"id": &types.AttributeValueMemberS{Value: opID},
				},
				ConditionExpression: aws.String("attribute_not_exists(id)"),
			})
			var ccf *types.ConditionalCheckFailedException
			if err == nil || errors.As(err, &ccf) {
				err = nil // written now, or by an earlier execution
				break
			}
		}
		if err != nil {
			http.Error(w, "effect not written", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"execution":%d}`, s.res.Executions)
	})
}

// run plays the schedule.
func (s *sim) run(ctx context.Context) error {
	ops := plan(s.sc)
	s.res.LogicalOps = len(ops)
	var q []*attempt // by time, then by order of scheduling
	seq := 0
	push := func(a *attempt) {
		seq++
		a.seq = seq
		i, _ := slices.BinarySearchFunc(q, a, func(x, y *attempt) int { return cmp.Or(cmp.Compare(x.at, y.at), cmp.Compare(x.seq, y.seq)) })
		q = slices.Insert(q, i, a)
	}
	for _, o := range ops {
		push(&attempt{at: o.start, op: o})
	}
	for len(q) > 0 {
		a := q[0]
		q = q[1:]
		if err := s.pumpBeforeOutage(ctx, a.at); err != nil {
			return err
		}
		advanceTo(s.clock, Epoch.Add(a.at))
		s.setOutage(a.at)
		if s.before != nil {
			if err := s.before(ctx, a.at); err != nil {
				return err
			}
		}
		if _, err := s.cluster.Pump(ctx); err != nil {
			return err
		}
		status := s.send(a)
		s.answered(status)
		final := status != http.StatusConflict && status < 500
		switch {
		case final && !a.op.lost[a.n]:
			s.res.Completed++
		case a.n+1 >= len(a.op.region):
			s.res.Abandoned++
		default:
			push(&attempt{at: a.at + a.op.delay[a.n], op: a.op, n: a.n + 1})
		}
	}
	return nil
}

// advanceTo moves clock forward to t; a clock past t stays.
func advanceTo(clock *ddbtest.Clock, t time.Time) {
	if d := t.Sub(clock.Now()); d > 0 {
		clock.Advance(d)
	}
}

func (s *sim) setOutage(at time.Duration) {
	if s.sc.NoOutage {
		return
	}
	down := at >= s.sc.OutageStart && at < s.sc.OutageEnd
	if down != s.cluster.Down(s.sc.OutageRegion) {
		if down {
			s.cluster.CutOff(s.sc.OutageRegion)
		} else {
			s.cluster.Restore(s.sc.OutageRegion)
		}
	}
}

// answered counts a request and its 503.
func (s *sim) answered(status int) {
	s.res.Requests++
	if status == http.StatusServiceUnavailable {
		s.res.Unavailable++
	}
}

// send serves one attempt in its region and returns the status.
func (s *sim) send(a *attempt) int {
	req := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(a.op.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(handler.HeaderName, a.op.key)
	req.Header.Set("X-Tenant", a.op.scope)
	rec := httptest.NewRecorder()
	if s.route != nil {
		s.route(a).ServeHTTP(rec, req)
	} else {
		s.services[a.op.region[a.n]].ServeHTTP(rec, req)
	}
	return rec.Code
}

// settle ends the outage, lets replication finish, and runs Reconcile in
// HomeFailover mode.
func (s *sim) settle(ctx context.Context) error {
	if err := s.drain(ctx); err != nil {
		return err
	}
	if s.mode != HomeFailover {
		s.res.Failovers = int(s.counters.Count(multiregion.EventFailover))
		return nil
	}
	return s.reconcile(ctx)
}

// reconcile runs Reconcile and records the failovers and the keys it
// reports as executed in two regions.
func (s *sim) reconcile(ctx context.Context) error {
	s.res.Failovers = int(s.counters.Count(multiregion.EventFailover))
	rep, err := s.routers[0].Reconcile(ctx)
	if err != nil {
		return err
	}
	if len(rep.Pending) > 0 || len(rep.Unreachable) > 0 {
		return fmt.Errorf("regionsim: reconcile left keys undecided: pending %v, unreachable %v", rep.Pending, rep.Unreachable)
	}
	for _, t := range rep.TwoRegion {
		s.res.FenceKeys = append(s.res.FenceKeys, t.Scope+"/"+t.Key)
	}
	slices.Sort(s.res.FenceKeys)
	s.res.FenceKeys = slices.Compact(s.res.FenceKeys)
	s.res.FenceReported = len(s.res.FenceKeys)
	return nil
}

// drain restores every region and lets replication finish.
func (s *sim) drain(ctx context.Context) error {
	for _, name := range s.cluster.Names() {
		s.cluster.Restore(name)
	}
	s.clock.Advance(s.sc.Lag + time.Second)
	for {
		if _, err := s.cluster.Pump(ctx); err != nil || s.cluster.Pending() == 0 {
			return err
		}
	}
}

// count counts duplicates from the effects (Strong: from the executions).
func (s *sim) count(ctx context.Context) error {
	if s.mode == Strong {
		for opID, n := range s.execs {
			if n > 1 {
				s.res.DuplicateKeys = append(s.res.DuplicateKeys, opID)
			}
		}
		slices.Sort(s.res.DuplicateKeys)
		s.res.Duplicates = len(s.res.DuplicateKeys)
		return nil
	}
	type effect struct {
		region string
		at     time.Duration
	}
	byOp := map[string]map[string]effect{} // op -> effect id -> effect
	for _, name := range s.cluster.Names() {
		items, err := s.cluster.Items(ctx, name, effectsTable)
		if err != nil {
			return err
		}
		for _, it := range items {
			id, opID := str(it["id"]), str(it["op"])
			region := s.cluster.Origin(effectsTable, "id", id)
			at, _ := strconv.ParseInt(num(it["at"]), 10, 64)
			if byOp[opID] == nil {
				byOp[opID] = map[string]effect{}
			}
			byOp[opID][id] = effect{region: region, at: time.Duration(at)}
		}
	}
	for opID, effects := range byOp {
		if len(effects) < 2 {
			continue
		}
		s.res.DuplicateKeys = append(s.res.DuplicateKeys, opID)
		first := effect{at: -1}
		for _, e := range effects {
			if first.at < 0 || e.at < first.at {
				first = e
			}
		}
		scope, key, _ := strings.Cut(opID, "/")
		home := multiregion.HomeOrder(scope, key, s.sc.Regions)[0]
		if !s.sc.NoOutage && first.region == s.sc.OutageRegion && home == s.sc.OutageRegion &&
			first.at >= s.sc.OutageStart-s.sc.Lag && first.at < s.sc.OutageStart {
			s.res.DuplicatesInLagWindow++
		}
	}
	slices.Sort(s.res.DuplicateKeys)
	s.res.Duplicates = len(s.res.DuplicateKeys)
	return nil
}

func str(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func num(v types.AttributeValue) string {
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		return n.Value
	}
	return ""
}
