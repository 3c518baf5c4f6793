package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/idemkey/idemkey"
)

// faultKind is what happens to one DynamoDB call (one HTTP attempt of the
// SDK).
type faultKind string

const (
	throttle      faultKind = "throttle"       // 400 ThrottlingException, not applied
	serverError   faultKind = "server_error"   // 500 InternalServerError, not applied
	timeoutBefore faultKind = "timeout_before" // the client times out; DynamoDB never saw the call
	timeoutAfter  faultKind = "timeout_after"  // DynamoDB applied the call, then the client timed out
	crash         faultKind = "crash"          // the process dies before the call is sent
)

var faultKinds = []faultKind{throttle, serverError, timeoutBefore, timeoutAfter}

// scenario is everything one run does, generated from a seed and then
// possibly shrunk. Times are offsets from the run's start.
type scenario struct {
	seed      uint64
	retention time.Duration // dynamostore Options.Retention
	lease     time.Duration // dynamostore Options.Lease
	maxSkew   time.Duration // bound of every process clock's skew
	procs     []procSpec
	ops       []opSpec
	crashes   []crashSpec
	ttl       []ttlSpec
	sweeps    []sweepSpec
}

// procSpec is one server process.
type procSpec struct {
	skew     time.Duration
	mode     idemkey.Mode
	cacheTTL time.Duration // 0: no cache
	// leaseMargin > 0: leases come from the request's deadline
	// (lease.FromDeadline with this margin).
	leaseMargin time.Duration
	// wait > 0: a duplicate in flight waits up to it
	// (idemkey.Options.WaitInFlight), never beyond the store's lease.
	wait time.Duration
}

// opSpec is one logical operation: one client, one key, one body, sent
// several times.
type opSpec struct {
	id    string
	scope string
	key   string
	// amount is the request body's: operations of one scope that share a
	// key differ in it, operations of different scopes may not.
	amount   int
	attempts []attemptSpec
}

// attemptSpec is one sending of an operation's request.
type attemptSpec struct {
	at       time.Duration
	proc     int
	work     []time.Duration // the handler's work, on virtual time
	fail     bool            // the handler answers 500
	deadline time.Duration   // > 0: the request's deadline, after which it is cut off (a Lambda timeout)
	faults   map[int]faultKind
	seed     uint64 // latencies
}

type crashSpec struct {
	at   time.Duration
	proc int
	down time.Duration
}

type ttlSpec struct {
	at   time.Duration
	seed uint64  // which expired items this pass deletes
	p    float64 // the chance that it deletes each expired item (0: 0.6)
}

type sweepSpec struct {
	at     time.Duration
	proc   int // whose clock the sweeper reads
	faults map[int]faultKind
	seed   uint64
}

// genOptions bound a generated scenario.
type genOptions struct {
	ops     int
	maxSkew time.Duration
}

func pick[T any](rng *rand.Rand, xs ...T) T { return xs[rng.IntN(len(xs))] }

func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// generate draws the scenario of seed.
func generate(seed uint64, g genOptions) *scenario {
	rng := rand.New(rand.NewPCG(seed, 0x5eed5eed))
	sc := &scenario{seed: seed}
	sc.retention = pick(rng, 20*time.Second, time.Minute, 3*time.Minute, 10*time.Minute)
	sc.lease = pick(rng, 5*time.Second, 30*time.Second, time.Minute, 5*time.Minute)
	if sc.lease > sc.retention {
		sc.lease = sc.retention // a store whose lease outlives its retention is refused by the fixed New
	}
	sc.maxSkew = time.Duration(rng.Int64N(int64(g.maxSkew)/int64(time.Second)+1)) * time.Second
	faultRate := pick(rng, 0.0, 0.03, 0.08, 0.2)
	nprocs := 1 + rng.IntN(4)
	for range nprocs {
		p := procSpec{}
		if sc.maxSkew > 0 {
			p.skew = time.Duration(rng.Int64N(int64(2*sc.maxSkew)+1)) - sc.maxSkew
			p.skew = p.skew.Truncate(time.Millisecond)
		}
		if rng.Float64() < 0.3 {
			p.mode = idemkey.OneTrip
		}
		if rng.Float64() < 0.5 {
			p.cacheTTL = pick(rng, 5*time.Second, time.Minute, time.Hour)
		}
		if rng.Float64() < 0.5 {
			p.leaseMargin = pick(rng, time.Second, 10*time.Second)
		}
		if rng.Float64() < 0.5 {
			p.wait = min(pick(rng, 2*time.Second, 20*time.Second, 5*time.Minute), sc.lease)
		}
		sc.procs = append(sc.procs, p)
	}
	horizon := 2*sc.retention + sc.lease
	scopes := []string{"alice", "bob"}
	keys := []string{"k1", "k2", "k3"}
	for i := range g.ops {
		op := opSpec{id: fmt.Sprintf("o%d", i+1), scope: pick(rng, scopes...), key: pick(rng, keys...), amount: pick(rng, 100, 200)}
		for slices.ContainsFunc(sc.ops, func(o opSpec) bool { return o.scope == op.scope && o.key == op.key && o.amount == op.amount }) {
			op.amount += 1000
		}
		n := 1 + rng.IntN(4)
		t := between(rng, 0, horizon/2)
		for j := range n {
			if j > 0 {
				t += retryDelay(rng, sc)
			}
			op.attempts = append(op.attempts, genAttempt(rng, sc, t, nprocs, faultRate))
		}
		sc.ops = append(sc.ops, op)
	}
	for range rng.IntN(3) {
		sc.crashes = append(sc.crashes, crashSpec{at: between(rng, 0, horizon), proc: rng.IntN(nprocs), down: between(rng, time.Second, 30*time.Second)})
	}
	for t := between(rng, 0, sc.retention); t < 2*horizon; t += between(rng, sc.retention/4, 2*sc.retention) {
		sc.ttl = append(sc.ttl, ttlSpec{at: t, seed: rng.Uint64()})
	}
	for range 1 + rng.IntN(3) {
		sc.sweeps = append(sc.sweeps, sweepSpec{at: between(rng, 0, 2*horizon), proc: rng.IntN(nprocs),
			faults: genFaults(rng, faultRate/2, false), seed: rng.Uint64()})
	}
	slices.SortFunc(sc.sweeps, func(a, b sweepSpec) int { return int(a.at - b.at) })
	return sc
}

// retryDelay is a client's delay before sending again: at once (a double
// click), seconds, around the lease, around the retention, or past it.
func retryDelay(rng *rand.Rand, sc *scenario) time.Duration {
	switch rng.IntN(6) {
	case 0:
		return between(rng, 0, 2*time.Second)
	case 1:
		return between(rng, 2*time.Second, 30*time.Second)
	case 2:
		return between(rng, sc.lease/2, sc.lease+5*time.Second)
	case 3:
		return between(rng, sc.retention-3*time.Second, sc.retention+3*time.Second)
	case 4:
		return between(rng, sc.retention, 2*sc.retention)
	default:
		return between(rng, 0, sc.lease)
	}
}

func genAttempt(rng *rand.Rand, sc *scenario, at time.Duration, nprocs int, faultRate float64) attemptSpec {
	a := attemptSpec{at: at, proc: rng.IntN(nprocs), seed: rng.Uint64()}
	for range 1 + rng.IntN(2) {
		var w time.Duration
		switch rng.IntN(5) {
		case 0, 1:
			w = between(rng, time.Millisecond, 2*time.Second)
		case 2:
			w = between(rng, sc.lease/2, sc.lease*3/2)
		case 3:
			w = between(rng, time.Second, sc.retention*3/2)
		default:
			w = between(rng, 0, 50*time.Millisecond)
		}
		a.work = append(a.work, w)
	}
	a.fail = rng.Float64() < 0.1
	if rng.Float64() < 0.35 {
		a.deadline = pick(rng, 10*time.Second, time.Minute, 5*time.Minute, 15*time.Minute, sc.retention+sc.lease)
	}
	a.faults = genFaults(rng, faultRate, true)
	return a
}

// genFaults draws the faults of the first calls of an actor: each call
// faulted at rate, and sometimes a burst of three faulted calls in a row
// (an outage), which exhausts the SDK's attempts.
func genFaults(rng *rand.Rand, rate float64, crashes bool) map[int]faultKind {
	var f map[int]faultKind
	if rate > 0 && rng.Float64() < 2*rate {
		f = map[int]faultKind{}
		for k := rng.IntN(8); len(f) < 3; k++ {
			f[k] = pick(rng, faultKinds...)
		}
	}
	for i := range 12 {
		if rng.Float64() >= rate {
			continue
		}
		if f == nil {
			f = map[int]faultKind{}
		}
		if crashes && rng.Float64() < 0.15 {
			f[i] = crash
		} else {
			f[i] = pick(rng, faultKinds...)
		}
	}
	return f
}

func (m procSpec) String() string {
	var b strings.Builder
	if m.mode == idemkey.OneTrip {
		b.WriteString("OneTrip")
	} else {
		b.WriteString("ClaimFirst")
	}
	fmt.Fprintf(&b, " skew=%v", m.skew)
	if m.cacheTTL > 0 {
		fmt.Fprintf(&b, " cache=%v", m.cacheTTL)
	}
	if m.leaseMargin > 0 {
		fmt.Fprintf(&b, " lease=deadline+%v", m.leaseMargin)
	}
	if m.wait > 0 {
		fmt.Fprintf(&b, " wait=%v", m.wait)
	}
	return b.String()
}

func faultString(f map[int]faultKind) string {
	if len(f) == 0 {
		return ""
	}
	idx := make([]int, 0, len(f))
	for i := range f {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	parts := make([]string, len(idx))
	for n, i := range idx {
		parts[n] = fmt.Sprintf("call%d:%s", i, f[i])
	}
	return " faults=" + strings.Join(parts, ",")
}

// String describes the configuration and the planned events.
func (sc *scenario) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: retention=%v lease=%v max_skew=%v\n", sc.seed, sc.retention, sc.lease, sc.maxSkew)
	for i, p := range sc.procs {
		fmt.Fprintf(&b, "  p%d: %v\n", i, p)
	}
	for _, op := range sc.ops {
		fmt.Fprintf(&b, "  %s: scope=%s key=%s amount=%d\n", op.id, op.scope, op.key, op.amount)
		for j, a := range op.attempts {
			fmt.Fprintf(&b, "    #%d at +%v on p%d work=%v", j+1, a.at, a.proc, a.work)
			if a.fail {
				b.WriteString(" answers=500")
			}
			if a.deadline > 0 {
				fmt.Fprintf(&b, " deadline=+%v", a.deadline)
			}
			b.WriteString(faultString(a.faults))
			b.WriteByte('\n')
		}
	}
	for _, c := range sc.crashes {
		fmt.Fprintf(&b, "  crash p%d at +%v, down %v\n", c.proc, c.at, c.down)
	}
	for _, t := range sc.ttl {
		fmt.Fprintf(&b, "  ttl pass at +%v\n", t.at)
	}
	for _, s := range sc.sweeps {
		fmt.Fprintf(&b, "  sweep at +%v on p%d's clock%s\n", s.at, s.proc, faultString(s.faults))
	}
	return b.String()
}

// clone returns a deep copy, for shrinking.
func (sc *scenario) clone() *scenario {
	c := *sc
	c.procs = slices.Clone(sc.procs)
	c.ops = make([]opSpec, len(sc.ops))
	for i, op := range sc.ops {
		c.ops[i] = op
		c.ops[i].attempts = make([]attemptSpec, len(op.attempts))
		for j, a := range op.attempts {
			a.work = slices.Clone(a.work)
			a.faults = cloneFaults(a.faults)
			c.ops[i].attempts[j] = a
		}
	}
	c.crashes = slices.Clone(sc.crashes)
	c.ttl = slices.Clone(sc.ttl)
	c.sweeps = make([]sweepSpec, len(sc.sweeps))
	for i, s := range sc.sweeps {
		s.faults = cloneFaults(s.faults)
		c.sweeps[i] = s
	}
	return &c
}

func cloneFaults(f map[int]faultKind) map[int]faultKind {
	if f == nil {
		return nil
	}
	c := make(map[int]faultKind, len(f))
	for k, v := range f {
		c[k] = v
	}
	return c
}
