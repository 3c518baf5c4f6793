package regionsim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/multiregion"
)

// The scripted scenarios of the fence: each plays Ops/10 episodes (at least
// one), one key each, one after the other on the virtual clock, with the
// regions, bodies and timings of each episode drawn from Seed and the
// episode's index. Every answer is lost, so the client retries.
const (
	// HomeFailoverZombie (HomeRegion with Failover): the key's home A is
	// cut off; a request claims the key in failover region B and stalls
	// past its lease; A is back and a retry executes there; then the
	// stalled request resumes and commits in B. A duplicate unless the home
	// execution retires B's abandoned claim first.
	HomeFailoverZombie Mode = "home-failover-zombie"
	// HomeFailoverReplica (HomeRegion with Failover): A is cut off, the key
	// executes in B and replicates to A; A is back and B is cut off; a
	// retry reaches A. A duplicate unless A decides from its replica of
	// B's failover record.
	HomeFailoverReplica Mode = "home-failover-replica"
	// HomeTTLReplicated (HomeRegion, retention 10s): the key executes in A
	// and expires; a new operation reuses the key in A; within the lag,
	// before B has seen that write, B evicts its old copy; later the retry
	// of the new operation reaches A. With TTL eviction (the setting the
	// library accepted until it refused it), B's TTL delete replicates, wins
	// last writer wins over A's newer record and erases it: the retry
	// executes again. With what the library accepts instead (EvictBySweeper,
	// TTL off, one sweeper per region deleting only that region's records),
	// B deletes nothing of A's.
	HomeTTLReplicated Mode = "home-ttl-replicated"
)

// FenceModes are the scripted fence scenarios, which ParseMode knows too.
// They are not in Modes: their logical operations are Ops/10 episodes.
var FenceModes = []Mode{HomeFailoverZombie, HomeFailoverReplica, HomeTTLReplicated}

// episodes are the episodes of the scripted scenarios, fence and combined.
var episodes = map[Mode]func(*fenceSim, *op, *rand.Rand) error{
	HomeFailoverZombie:     (*fenceSim).zombie,
	HomeFailoverReplica:    (*fenceSim).replica,
	HomeTTLReplicated:      (*fenceSim).ttlReplicated,
	HomeRehomeSweep:        (*fenceSim).rehome,
	HomeFailoverChain:      (*fenceSim).chain,
	HomeFailoverTopology:   (*fenceSim).failoverTopology,
	HomeRegionRemoved:      (*fenceSim).removedRegion,
	HomeSkewedClocks:       (*fenceSim).skewedClocks,
	HomeSkewedClocksBeyond: (*fenceSim).skewedClocks,
}

// Timings of the scripted scenarios.
const (
	fenceLease     = 5 * time.Second
	fenceRetention = 10 * time.Second
	episodeGap     = time.Minute
)

// stallToken is how a stalled execution hands over its resume channel.
type stallToken chan chan struct{}

// fenceSim is one run of a scripted scenario.
type fenceSim struct {
	*sim
	ctx    context.Context
	names  []string
	stall  chan stallToken // armed: the next execution sends a resume channel on the token and waits
	ops    map[string]int  // "scope/key" -> logical operations that used it
	sweeps []*dynamostore.Sweeper
	ttl    bool // TTL eviction (the library accepted it); else region sweepers

	// The combined scenarios (scenario_combined.go): the stores of each
	// region read their region's clock (skew), the fleet is rebuilt when
	// the topology changes (live, pins), and after, when set, runs once
	// every episode has been played.
	regions  []multiregion.Region // every region of the cluster
	eviction multiregion.Eviction
	skew     map[string]time.Duration
	live     []string // the regions of the topology the fleet is configured with
	pins     map[string]string
	lagKeys  map[string]bool // "scope/key" of the episodes that execute within the lag window
	after    func() error
}

func runFence(ctx context.Context, mode Mode, sc Scenario, episode func(*fenceSim, *op, *rand.Rand) error) (*Result, error) {
	sc = sc.withDefaults()
	if len(sc.Regions) < 2 {
		return nil, fmt.Errorf("regionsim: mode %s needs two regions", mode)
	}
	if sc.Lag <= 0 {
		sc.Lag = time.Second
	}
	f := &fenceSim{sim: newSim(sc, mode), ctx: ctx, names: sc.Regions, ops: map[string]int{}, lagKeys: map[string]bool{}}
	if err := f.combine(); err != nil { // scenario_combined.go
		return nil, err
	}
	if err := f.start(ctx); err != nil {
		return nil, err
	}
	defer f.cluster.Close()
	if err := f.setup(); err != nil {
		return nil, err
	}
	if err := f.firstTopology(); err != nil {
		return nil, err
	}
	for i := range max(1, sc.Ops/10) {
		rng := rand.New(rand.NewPCG(sc.Seed, uint64(i)+1))
		o := &op{index: i, scope: "tenant-" + strconv.Itoa(rng.IntN(8)), key: fmt.Sprintf("op-%05d", i),
			body: fmt.Sprintf(`{"amount":%d,"currency":"EUR"}`, 100+rng.IntN(9900))}
		advanceTo(f.clock, Epoch.Add(time.Duration(i)*episodeGap))
		f.ops[o.id()]++
		f.res.LogicalOps++
		if err := episode(f, o, rng); err != nil {
			return nil, fmt.Errorf("regionsim: %s episode %d: %w", mode, i, err)
		}
		if err := f.drain(f.ctx); err != nil {
			return nil, err
		}
		if f.skew != nil {
			// Reconcile after each episode, before its records expire.
			if err := f.reconcile(); err != nil {
				return nil, err
			}
		}
	}
	if f.after != nil {
		if err := f.after(); err != nil {
			return nil, fmt.Errorf("regionsim: %s: %w", mode, err)
		}
		if err := f.drain(f.ctx); err != nil {
			return nil, err
		}
	}
	if err := f.reconcile(); err != nil {
		return nil, err
	}
	return &f.res, f.countFence()
}

func (f *fenceSim) setup() error {
	ctx := f.ctx
	if err := f.createTables(ctx); err != nil {
		return err
	}
	for _, r := range f.cluster.Regions() {
		f.regions = append(f.regions, multiregion.NewRegion(r.Name, r.Client, keysTable, f.storeOptions(r.Name)))
	}
	f.live = slices.Clone(f.names)
	f.eviction = multiregion.EvictBySweeper
	if f.mode == HomeTTLReplicated {
		f.eviction = multiregion.EvictByTTL // today's default: refused since TTL deletes were shown to replicate
		if _, err := multiregion.New(f.regions, f.options()); err == nil {
			f.ttl = true
		} else if errors.Is(err, multiregion.ErrInvalidConfig) {
			f.eviction = multiregion.EvictBySweeper
		} else {
			return err
		}
	}
	return f.fleet()
}

// now returns the clock of the processes of region name: the virtual
// clock, off by the region's skew.
func (f *fenceSim) now(name string) func() time.Time {
	d := f.skew[name]
	return func() time.Time { return f.clock.Now().Add(d) }
}

// options are the router options of the fleet.
func (f *fenceSim) options() func(*multiregion.Options) {
	return func(o *multiregion.Options) {
		f.routerOptions(o)
		o.Mode = multiregion.HomeRegion
		o.Failover = f.mode != HomeTTLReplicated && f.mode != HomeRehomeSweep
		o.Eviction = f.eviction
		o.Pins = f.pins
		o.TopologyRefresh = TopologyRefresh
	}
}

// fleet (re)builds one process per region of the live topology, each with
// the region's sweeper.
func (f *fenceSim) fleet() error {
	f.routers, f.services, f.sweeps = nil, nil, nil
	for _, r := range f.cluster.Regions() {
		if !slices.Contains(f.live, r.Name) {
			f.routers, f.services = append(f.routers, nil), append(f.services, http.NotFoundHandler())
			continue
		}
		router, err := multiregion.New(f.processRegions(r.Name), f.options(), func(o *multiregion.Options) { o.Local = r.Name })
		if err != nil {
			return err
		}
		f.routers = append(f.routers, router)
		f.services = append(f.services, service(router, f.stallable(f.mrecEffect(r))))
		if !f.ttl {
			owns, err := router.SweepOwner(r.Name)
			if err != nil {
				return err
			}
			f.sweeps = append(f.sweeps, regionSweeper(r, keysTable, f.now(r.Name), owns))
		}
	}
	return nil
}

// processRegions returns the live regions as the process of region proc
// reaches them: in a combined scenario through stores that read proc's
// clock (every record the process writes, in any region, carries its
// clock), otherwise the shared stores, each with its region's clock.
func (f *fenceSim) processRegions(proc string) []multiregion.Region {
	var out []multiregion.Region
	for _, r := range f.regions {
		if !slices.Contains(f.live, r.Name) {
			continue
		}
		if f.skew != nil {
			r = multiregion.NewRegion(r.Name, f.cluster.Region(r.Name).Client, keysTable, f.storeOptions(proc))
		}
		out = append(out, r)
	}
	return out
}

// storeOptions are the options of the stores of region proc's processes.
func (f *fenceSim) storeOptions(proc string) func(*dynamostore.Options) {
	return func(o *dynamostore.Options) {
		o.Now = f.now(proc)
		o.Lease = fenceLease
		o.Retention = fenceRetention
	}
}

// stallable wraps an execution: when armed, it hands the caller a channel
// and waits on it before executing (after its claim, before its commit).
func (f *fenceSim) stallable(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case ready := <-f.stall:
			resume := make(chan struct{})
			ready <- resume
			<-resume
		default:
		}
		next.ServeHTTP(w, req)
	})
}

// attempt sends o to the service of region and counts the request.
func (f *fenceSim) attempt(o *op, region string) int {
	o.region = append(o.region, slices.Index(f.names, region))
	status := f.send(&attempt{op: o, n: len(o.region) - 1})
	f.answered(status)
	return status
}

// stalledAttempt sends o to region's service and returns once its
// execution has stalled; resume lets it go on and waits for its answer.
func (f *fenceSim) stalledAttempt(o *op, region string) (resume func()) {
	f.stall = make(chan stallToken, 1)
	ready := make(stallToken)
	f.stall <- ready
	done := make(chan struct{})
	o.region = append(o.region, slices.Index(f.names, region))
	a := &attempt{op: o, n: len(o.region) - 1}
	status := 0
	go func() {
		defer close(done)
		status = f.send(a)
	}()
	select {
	case release := <-ready:
		return func() {
			close(release)
			<-done
			f.answered(status)
		}
	case <-done: // answered without executing
		<-f.stall
		f.answered(status)
		return func() {}
	}
}

// other draws a region that is none of not.
func (f *fenceSim) other(rng *rand.Rand, not ...string) string {
	var c []string
	for _, n := range f.names {
		if !slices.Contains(not, n) {
			c = append(c, n)
		}
	}
	return c[rng.IntN(len(c))]
}

func (f *fenceSim) pump(d time.Duration) error {
	f.clock.Advance(d)
	_, err := f.cluster.Pump(f.ctx)
	return err
}

func (f *fenceSim) zombie(o *op, rng *rand.Rand) error {
	order := multiregion.HomeOrder(o.scope, o.key, f.names)
	home := order[0]
	f.cluster.CutOff(home)
	resume := f.stalledAttempt(o, f.other(rng, home))
	f.cluster.Restore(home)
	if err := f.pump(fenceLease + time.Duration(1+rng.IntN(3))*time.Second); err != nil {
		return err
	}
	f.attempt(o, f.other(rng))
	resume()
	return nil
}

func (f *fenceSim) replica(o *op, rng *rand.Rand) error {
	order := multiregion.HomeOrder(o.scope, o.key, f.names)
	home, next := order[0], order[1]
	f.cluster.CutOff(home)
	f.attempt(o, f.other(rng, home))
	f.cluster.Restore(home)
	if err := f.pump(f.sc.Lag + time.Duration(rng.IntN(1000))*time.Millisecond); err != nil {
		return err
	}
	f.cluster.CutOff(next)
	f.attempt(o, f.other(rng, next))
	f.cluster.Restore(next)
	return nil
}

func (f *fenceSim) ttlReplicated(o *op, rng *rand.Rand) error {
	f.attempt(o, f.other(rng))
	if err := f.pump(fenceRetention + time.Duration(1+rng.IntN(3))*time.Second); err != nil {
		return err
	}
	// A new operation reuses the expired key; its answer is lost.
	again := &op{index: o.index, scope: o.scope, key: o.key, body: fmt.Sprintf(`{"amount":%d,"currency":"USD"}`, 100+rng.IntN(9900))}
	f.ops[again.id()]++
	f.res.LogicalOps++
	f.attempt(again, f.other(rng))
	// Within the lag, every region evicts what it holds as expired.
	f.clock.Advance(time.Duration(1+rng.IntN(int(f.sc.Lag/time.Millisecond)-1)) * time.Millisecond)
	if err := f.evict(); err != nil {
		return err
	}
	if err := f.pump(f.sc.Lag + time.Second); err != nil {
		return err
	}
	f.attempt(again, f.other(rng))
	return nil
}

// evict runs eviction once in every region: DynamoDB TTL, or each
// region's sweeper.
func (f *fenceSim) evict() error {
	if f.ttl {
		for _, name := range f.names {
			if _, err := f.cluster.ExpireTTL(f.ctx, name, keysTable, dynamostore.TTLAttribute); err != nil {
				return err
			}
		}
		return nil
	}
	for _, sw := range f.sweeps {
		if _, err := sw.Sweep(f.ctx, ""); err != nil {
			return err
		}
	}
	return nil
}

// reconcile runs Reconcile in the failover scenarios.
func (f *fenceSim) reconcile() error {
	if f.mode == HomeTTLReplicated {
		f.res.Failovers = int(f.counters.Count(multiregion.EventFailover))
		return nil
	}
	return f.sim.reconcile(f.ctx)
}

// countFence counts as duplicates the keys with more effect items, across
// all regions, than logical operations that used them.
func (f *fenceSim) countFence() error {
	effects := map[string]map[string]bool{}
	for _, name := range f.names {
		items, err := f.cluster.Items(f.ctx, name, effectsTable)
		if err != nil {
			return err
		}
		for _, it := range items {
			opID := str(it["op"])
			if effects[opID] == nil {
				effects[opID] = map[string]bool{}
			}
			effects[opID][str(it["id"])] = true
		}
	}
	for opID, ids := range effects {
		if len(ids) > f.ops[opID] {
			f.res.DuplicateKeys = append(f.res.DuplicateKeys, opID)
		}
	}
	slices.Sort(f.res.DuplicateKeys)
	slices.Sort(f.res.FenceKeys)
	f.res.Duplicates = len(f.res.DuplicateKeys)
	for _, k := range f.res.DuplicateKeys {
		if f.lagKeys[k] {
			f.res.DuplicatesInLagWindow++
		}
	}
	return nil
}

// pumpBeforeOutage applies, when the outage begins before at, the
// replication due by the outage's start, at that instant: replication is
// otherwise applied only between requests, and a sparse workload would
// hold back changes that were due before the region went dark, widening
// the lag window the failover risk is stated for.
func (s *sim) pumpBeforeOutage(ctx context.Context, at time.Duration) error {
	start := Epoch.Add(s.sc.OutageStart)
	if s.sc.NoOutage || s.cluster.Down(s.sc.OutageRegion) || !s.clock.Now().Before(start) || at < s.sc.OutageStart {
		return nil
	}
	advanceTo(s.clock, start)
	_, err := s.cluster.Pump(ctx)
	return err
}
