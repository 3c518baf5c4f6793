package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/keyschema"
	"github.com/idemkey/idemkey/internal/lease"
	"github.com/idemkey/idemkey/internal/waitclock"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/txn"
)

const (
	keyTable    = "sim-keys"
	effectTable = "sim-effects"
)

// epoch is virtual time zero. It lies in the future so that no deadline
// derived from it has passed on the wall clock.
var epoch = time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)

// run is one execution of a scenario.
type run struct {
	sc     *scenario
	s      *scheduler
	front  http.Handler
	client *dynamodb.Client // the processes': parks, faults
	obs    *dynamodb.Client // the observer's: neither

	procs    []*proc
	attempts []*attempt
	execs    map[string]*execution
	execList []*execution

	claims      map[string]*claimRec  // by lock token: the first claim applied with it
	lockEnded   map[string]bool       // lock tokens whose owner committed or released
	lockNames   map[string]string     // lock token → L1, L2, ...
	commits     map[string]*commitRec // by execution: its applied commit
	commitOrder []*commitRec

	viol    []violation
	tracing bool
	trace   []string
	fig     figures
}

type claimRec struct {
	lock      string
	pk        string
	at        time.Time
	lockExpMs int64
	expS      int64
	by        string
}

type commitRec struct {
	exec    string
	lock    string
	pk      string
	at      time.Time // applied
	claimAt time.Time // its claim applied (the commit itself for OneTrip)
	expS    int64
}

type violation struct{ kind, msg string }

// figures count what a run did.
type figures struct {
	ops, attempts, executions, commits, replays int
	waits, waitReplays, waitInFlight            int // attempts that waited, and those answered by a replay or 409
	faults                                      map[faultKind]int
	crashes, ttlDeletes, sweeps                 int
	evicted, reclaimed                          int64
}

func (r *run) violate(kind, format string, args ...any) {
	r.viol = append(r.viol, violation{kind: kind, msg: fmt.Sprintf(format, args...)})
	r.tracef("VIOLATION (%s) %s", kind, fmt.Sprintf(format, args...))
}

func (r *run) tracef(format string, args ...any) {
	if r.tracing {
		r.trace = append(r.trace, fmt.Sprintf("%-14s ", rel(r.s.now))+fmt.Sprintf(format, args...))
	}
}

// proc is one server process; it restarts after a crash with a new
// instance (a new handler, guard, store and cache).
type proc struct {
	r         *run
	idx       int
	spec      procSpec
	inst      *instance
	gen       int
	downUntil time.Time
}

type instance struct {
	p    *proc
	gen  int
	h    http.Handler
	dead bool
	live []*attempt
}

// now is the process's clock: virtual time plus its skew.
func (p *proc) now() time.Time { return p.r.s.now.Add(p.spec.skew) }

// current returns the running instance, starting one if the process is up
// again, or nil while it is down.
func (p *proc) current() *instance {
	if p.inst != nil {
		return p.inst
	}
	if p.r.s.now.Before(p.downUntil) {
		return nil
	}
	p.gen++
	inst := &instance{p: p, gen: p.gen}
	r := p.r
	store := dynamostore.New(r.client, keyTable, func(o *dynamostore.Options) {
		o.Retention = r.sc.retention
		o.Lease = r.sc.lease
		o.Now = p.now
	})
	var cache *idemkey.Cache
	if p.spec.cacheTTL > 0 {
		cache = idemkey.NewCache(64, p.spec.cacheTTL)
	}
	spec := p.spec
	mw := handler.New(store, func(o *handler.Options) {
		o.Scope = scopeOf
		o.Guard = idemkey.Options{Mode: spec.mode, Cache: cache, Now: p.now, WriteTimeout: time.Hour, WaitInFlight: spec.wait}
		if spec.leaseMargin > 0 {
			o.Lease = func(req *http.Request) time.Duration {
				return lease.FromDeadline(req.Context(), spec.leaseMargin, p.now())
			}
		}
	})
	inst.h = mw(r.app())
	p.inst = inst
	return inst
}

// scopeOf is the services' authentication: the bearer token names the
// caller.
func scopeOf(req *http.Request) (string, error) {
	tok, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return "", fmt.Errorf("no bearer token")
	}
	return tok, nil
}

// crash kills the running instance: its in-flight attempts' later calls
// never reach DynamoDB, and their clients see the connection drop.
func (p *proc) crash(down time.Duration) {
	if p.inst == nil {
		return
	}
	p.inst.dead = true
	for _, a := range p.inst.live {
		a.dead = true
	}
	p.inst = nil
	p.downUntil = p.r.s.now.Add(down)
	p.r.fig.crashes++
	p.r.tracef("p%d crashes, down until %s", p.idx, rel(p.downUntil))
}

// attempt is one sending of an operation's request.
type attempt struct {
	r        *run
	op       *opSpec
	spec     *attemptSpec
	name     string
	p        *proc
	inst     *instance
	actor    *actor
	dead     bool
	deadline time.Time // true time; zero: none
	done     bool
	claim    *claimRec // the last claim it applied
	waited   bool      // it waited for a duplicate in flight
	exec     *execution
	ans      *answer
}

// alive reports whether the attempt still runs: its process has not
// crashed under it and its deadline has not passed.
func (a *attempt) alive() bool {
	if a.dead {
		return false
	}
	if !a.deadline.IsZero() && !a.r.s.now.Before(a.deadline) {
		a.dead = true
		a.r.tracef("%s cut off at its deadline", a.name)
		return false
	}
	return true
}

// work is the handler's work: d of virtual time, cut short by a crash or
// the deadline.
func (a *attempt) work(d time.Duration) {
	if !a.alive() {
		return
	}
	if !a.deadline.IsZero() && a.r.s.now.Add(d).After(a.deadline) {
		d = a.deadline.Sub(a.r.s.now)
	}
	a.actor.sleep(d)
}

// waitPoll is the step of virtual time at which a waiting attempt looks
// whether its wait was woken.
const waitPoll = 5 * time.Millisecond

// waitSleep is the Guard's sleep of an attempt that waits for a duplicate
// in flight, on virtual time: until the process's clock reaches until or
// the wait is woken (a read in progress wakes it when it ends). A dead
// attempt sleeps on: its reads fail, and its wait ends at until.
func (a *attempt) waitSleep(_ context.Context, until time.Time, wake <-chan struct{}, _ bool) {
	if !a.waited {
		a.waited = true
		a.r.tracef("%s waits for a duplicate in flight", a.name)
	}
	for {
		select {
		case <-wake:
			return
		default:
		}
		left := until.Sub(a.p.now())
		if left <= 0 {
			return
		}
		a.actor.sleep(min(left, waitPoll))
	}
}

type answer struct {
	at       time.Time
	procNow  time.Time
	status   int
	body     []byte
	replayed bool
	crashed  bool
	calls    int
}

type execution struct {
	id     string
	a      *attempt
	pk     string
	mode   idemkey.Mode
	start  time.Time
	claim  *claimRec
	status int
	body   []byte
}

// holding reports whether execution e still runs under its lock: its
// attempt has not returned nor died, and has not committed or released.
func (r *run) holding(e *execution) bool {
	return !e.a.done && e.a.alive() && !r.lockEnded[e.claim.lock]
}

// deadlineCtx gives a request a deadline on virtual time that the wall
// clock never fires.
type deadlineCtx struct {
	context.Context
	d time.Time
}

func (c deadlineCtx) Deadline() (time.Time, bool) { return c.d, true }

func requestBody(op *opSpec) string { return fmt.Sprintf(`{"amount":%d,"currency":"EUR"}`, op.amount) }

func fpOf(op *opSpec) string {
	sum := sha256.Sum256([]byte(requestBody(op)))
	return hex.EncodeToString(sum[:6])
}

func pkOf(op *opSpec) string { return keyschema.PartitionKey(op.scope, op.key) }

// respBody is what every execution answers: who it is for and who made it.
type respBody struct {
	Scope string `json:"scope"`
	Key   string `json:"key"`
	Op    string `json:"op"`
	FP    string `json:"fp"`
	Exec  string `json:"exec"`
}

// app is the guarded handler: it records its execution (the external
// effect), works, stages its effect item and answers.
func (r *run) app() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		a := actorOf(req.Context()).att
		if a.waited && a.p.spec.mode == idemkey.ClaimFirst {
			r.violate("w", "%s executed after it waited for a duplicate in flight", a.name)
		}
		ex := r.startExec(a)
		for _, d := range a.spec.work {
			a.work(d)
		}
		tx, ok := txn.FromContext(req.Context())
		if !ok {
			r.violate("sim", "%s: no txn.Tx in the handler's context", a.name)
			return
		}
		tx.Put(types.Put{
			TableName: aws.String(effectTable),
			Item: map[string]types.AttributeValue{
				"id":   &types.AttributeValueMemberS{Value: a.op.id + "/" + ex.id},
				"op":   &types.AttributeValueMemberS{Value: a.op.id},
				"exec": &types.AttributeValueMemberS{Value: ex.id},
			},
			ConditionExpression: aws.String("attribute_not_exists(id)"),
		})
		body, _ := json.Marshal(respBody{Scope: a.op.scope, Key: a.op.key, Op: a.op.id, FP: fpOf(a.op), Exec: ex.id})
		ex.status = http.StatusCreated
		if a.spec.fail {
			ex.status = http.StatusInternalServerError
		}
		ex.body = body
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/ops/"+ex.id)
		w.WriteHeader(ex.status)
		_, _ = w.Write(body)
		r.tracef("%s handler %s ends, answers %d", a.name, ex.id, ex.status)
	})
}

// startExec records an execution and checks that no other ClaimFirst
// execution of the key still holds a live lock.
func (r *run) startExec(a *attempt) *execution {
	ex := &execution{id: fmt.Sprintf("x%d", len(r.execList)+1), a: a, pk: pkOf(a.op), mode: a.p.spec.mode, start: r.s.now}
	if ex.mode == idemkey.ClaimFirst {
		ex.claim = a.claim
		if ex.claim == nil {
			r.violate("sim", "%s: ClaimFirst execution %s without an applied claim", a.name, ex.id)
		}
	}
	a.exec = ex
	r.execs[ex.id] = ex
	r.execList = append(r.execList, ex)
	r.fig.executions++
	r.tracef("%s handler %s starts", a.name, ex.id)
	if ex.mode != idemkey.ClaimFirst {
		return ex
	}
	skewMs := r.sc.maxSkew.Milliseconds()
	for _, e := range r.execList {
		if e == ex || e.pk != ex.pk || e.mode != idemkey.ClaimFirst || e.claim == nil || !r.holding(e) {
			continue
		}
		if r.s.now.UnixMilli() < e.claim.lockExpMs-skewMs {
			r.violate("b", "%s started execution %s of %s at %s while execution %s (%s, started %s) still ran under its lock, live until %s (max skew %v)",
				a.name, ex.id, ex.pk, rel(r.s.now), e.id, e.a.name, rel(e.start), msTime(e.claim.lockExpMs), r.sc.maxSkew)
		}
	}
	return ex
}

// newRun builds the emulator, its tables and the processes of sc.
func newRun(sc *scenario, tracing bool) (*run, error) {
	r := &run{sc: sc, s: newScheduler(epoch), tracing: tracing,
		execs: map[string]*execution{}, claims: map[string]*claimRec{}, lockEnded: map[string]bool{}, lockNames: map[string]string{}, commits: map[string]*commitRec{}}
	r.fig.faults = map[faultKind]int{}
	r.s.onPanic = func(name string, p any, stack []byte) {
		r.violate("panic", "%s panicked: %v\n%s", name, p, stack)
	}
	r.front = localstack.NewHandler(func(o *localstack.Options) { o.Now = func() time.Time { return r.s.now } })
	base := dynamodb.Options{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("sim", "sim", ""),
		BaseEndpoint: aws.String("http://dynamodb.sim.invalid"),
	}
	obs := base
	obs.HTTPClient = direct{r}
	r.obs = dynamodb.New(obs)
	procOpts := base
	procOpts.HTTPClient = r
	// The SDK's own retries stay (an ambiguous call is sent again with
	// the same body), without real-time backoff or a retry quota.
	procOpts.Retryer = retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = 3
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		o.RateLimiter = ratelimit.None
	})
	r.client = dynamodb.New(procOpts)

	ctx := context.Background()
	if err := dynamostore.EnsureTable(ctx, r.obs, keyTable, 0); err != nil {
		return nil, err
	}
	if _, err := r.obs.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(effectTable),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		return nil, err
	}
	for i, ps := range sc.procs {
		r.procs = append(r.procs, &proc{r: r, idx: i, spec: ps})
	}
	return r, nil
}

// execute runs sc to its end and checks the invariants.
func execute(sc *scenario, tracing bool) (*run, error) {
	r, err := newRun(sc, tracing)
	if err != nil {
		return nil, err
	}
	s := r.s
	for i := range sc.ops {
		op := &sc.ops[i]
		r.fig.ops++
		for j := range op.attempts {
			spec := &op.attempts[j]
			a := &attempt{r: r, op: op, spec: spec, name: fmt.Sprintf("%s#%d@p%d", op.id, j+1, spec.proc), p: r.procs[spec.proc]}
			r.attempts = append(r.attempts, a)
			r.fig.attempts++
			s.at(epoch.Add(spec.at), func() { r.arrive(a) })
		}
	}
	for _, c := range sc.crashes {
		s.at(epoch.Add(c.at), func() { r.procs[c.proc].crash(c.down) })
	}
	for _, t := range sc.ttl {
		s.at(epoch.Add(t.at), func() { r.ttlPass(t) })
	}
	for i, sw := range sc.sweeps {
		s.at(epoch.Add(sw.at), func() { r.sweep(i, sw) })
	}
	s.run()
	r.check()
	return r, nil
}

// arrive delivers an attempt to its process.
func (r *run) arrive(a *attempt) {
	inst := a.p.current()
	if inst == nil {
		a.done = true
		a.ans = &answer{at: r.s.now, crashed: true}
		r.tracef("%s arrives: p%d is down, connection refused", a.name, a.p.idx)
		return
	}
	a.inst = inst
	inst.live = append(inst.live, a)
	if a.spec.deadline > 0 {
		a.deadline = r.s.now.Add(a.spec.deadline)
	}
	a.actor = &actor{name: a.name, att: a, rng: rand.New(rand.NewPCG(a.spec.seed, 2)), faults: a.spec.faults}
	r.tracef("%s arrives (p%d gen %d, clock %s)", a.name, a.p.idx, inst.gen, rel(a.p.now()))
	r.s.spawn(r.s.now, a.actor, func(ctx context.Context) { r.send(ctx, a) })
}

// send is the attempt's actor: the client's request through the
// middleware, called directly.
func (r *run) send(ctx context.Context, a *attempt) {
	if !a.deadline.IsZero() {
		ctx = deadlineCtx{Context: ctx, d: a.deadline}
	}
	ctx = waitclock.With(ctx, a.waitSleep)
	jitter := rand.New(rand.NewPCG(a.spec.seed, 3))
	ctx = waitclock.WithJitter(ctx, jitter.Float64)
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/ops", strings.NewReader(requestBody(a.op)))
	req.Header.Set("Idempotency-Key", a.op.key)
	req.Header.Set("Authorization", "Bearer "+a.op.scope)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	a.inst.h.ServeHTTP(rec, req)
	ans := &answer{at: r.s.now, procNow: a.p.now(), status: rec.Code, body: rec.Body.Bytes(),
		replayed: rec.Header().Get(handler.ReplayedHeader) == "true", calls: a.actor.calls}
	ans.crashed = !a.alive()
	if a.waited && !ans.crashed {
		r.fig.waits++
		switch {
		case ans.replayed:
			r.fig.waitReplays++
		case ans.status == http.StatusConflict:
			r.fig.waitInFlight++
		}
	}
	a.done = true
	a.ans = ans
	if ans.crashed {
		r.tracef("%s: the client sees the connection drop", a.name)
	} else {
		r.tracef("%s answered %d replayed=%v %s", a.name, ans.status, ans.replayed, strings.TrimSpace(string(ans.body)))
	}
}

// ttlPass is DynamoDB's TTL process: it deletes some of the items whose
// exp has passed (by true time), each with a DeleteItem conditioned on
// exp, as TTL does.
func (r *run) ttlPass(t ttlSpec) {
	rng := rand.New(rand.NewPCG(t.seed, 3))
	prob := t.p
	if prob == 0 {
		prob = 0.6
	}
	nowS := r.s.now.Unix()
	for _, it := range r.scanAll(keyTable) {
		ks := keyStateOf(it)
		if ks == nil || ks.expS == 0 || ks.expS >= nowS || rng.Float64() >= prob {
			continue
		}
		body, _ := json.Marshal(map[string]any{
			"TableName":                 keyTable,
			"Key":                       jitem{"pk": sAttr(ks.pk)},
			"ConditionExpression":       "#exp < :now",
			"ExpressionAttributeNames":  map[string]string{"#exp": "exp"},
			"ExpressionAttributeValues": jitem{":now": nAttr(nowS)},
		})
		if rec := r.serve("DeleteItem", nil, body); rec.Code == http.StatusOK {
			r.fig.ttlDeletes++
			r.tracef("TTL deletes %s (%s, exp %s)", ks.pk, ks.state, sTime(ks.expS))
			r.checkReplace("TTL", "deleted", ks, r.s.now)
		}
	}
}

// sweep runs dynamostore.Sweeper as an actor, on one segment, on the
// clock of process sw.proc.
func (r *run) sweep(i int, sw sweepSpec) {
	p := r.procs[sw.proc]
	a := &actor{name: fmt.Sprintf("sweep%d@p%d", i+1, sw.proc), rng: rand.New(rand.NewPCG(sw.seed, 4)), faults: sw.faults}
	r.fig.sweeps++
	r.s.spawn(r.s.now, a, func(ctx context.Context) {
		sweeper := dynamostore.NewSweeper(r.client, keyTable, func(o *dynamostore.SweepOptions) {
			o.Segments = 1
			o.PageSize = 1000
			o.ItemsPerSecond = -1
			o.Now = p.now
		})
		rep, err := sweeper.Sweep(ctx, "")
		if rep != nil {
			r.fig.evicted += rep.Evicted
			r.fig.reclaimed += rep.Reclaimed
			r.tracef("%s: scanned %d evicted %d reclaimed %d skipped %d err %v", a.name, rep.Scanned, rep.Evicted, rep.Reclaimed, rep.Skipped, err)
		}
	})
}
