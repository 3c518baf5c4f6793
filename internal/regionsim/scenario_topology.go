package regionsim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/multiregion"
)

// HomeTopologyChange: HomeRegion mode (failing closed) during a rolling
// deploy that adds AddedRegion under load, without an outage. The cluster
// holds AddedRegion from the start (its replica has caught up). Each old
// region runs two "old" processes, configured without AddedRegion; the
// operator steps the topology record with multiregion.AdvanceTopology
// through the first region, following TopologyTimeline: the old topology
// at 0, prepare at Prepare, switch at Switch and finish at Finish. From
// DeployStart to DeployEnd the old processes are replaced one by one by
// "new" ones, configured with AddedRegion, and two new ones start in
// AddedRegion. An attempt reaches one process of its region drawn at
// random, so old and new serve at once and retries reach either.
const HomeTopologyChange Mode = "home-topology-change"

// AddedRegion is the region a HomeTopologyChange scenario adds.
const AddedRegion = "eu-central-1"

// TopologyRefresh is how often the processes of the topology scenarios
// read the topology record (multiregion.Options.TopologyRefresh).
const TopologyRefresh = time.Second

// Timeline is when the steps of a HomeTopologyChange run happen, in
// virtual time from the start of the scenario.
type Timeline struct {
	Prepare, DeployStart, DeployEnd, Switch, Finish time.Duration
}

// TopologyTimeline returns the timeline of a HomeTopologyChange run with
// replication lag lag, the waits of the procedure in multiregion/README.md,
// each with 500ms of margin: Prepare at 500ms; the deploy from lag +
// TopologyRefresh after it (every process has read the prepare record), for
// 4s; Switch after it; Finish 2*lag + TopologyRefresh after Switch (every
// process has left the prepare record and its claims have replicated).
func TopologyTimeline(lag time.Duration) Timeline {
	const margin = 500 * time.Millisecond
	var t Timeline
	t.Prepare = margin
	t.DeployStart = t.Prepare + lag + TopologyRefresh + margin
	t.DeployEnd = t.DeployStart + 4*time.Second
	t.Switch = t.DeployEnd + margin
	t.Finish = t.Switch + 2*lag + TopologyRefresh + margin
	return t
}

// topologySim is the process fleet of a HomeTopologyChange run.
type topologySim struct {
	s        *sim
	old, new []multiregion.Region
	slots    [][]*slot // per region of the cluster
	tl       Timeline
	steps    []step
	rng      *rand.Rand
}

// slot is one process: old until deployAt (never, for -1), new after.
type slot struct {
	deployAt time.Duration
	old, new http.Handler
}

type step struct {
	at   time.Duration
	done bool
	to   multiregion.Topology
}

// runTopologyChange is Run for HomeTopologyChange.
func runTopologyChange(ctx context.Context, sc Scenario) (*Result, error) {
	if slices.Contains(sc.Regions, AddedRegion) {
		return nil, fmt.Errorf("regionsim: %s is the region the scenario adds", AddedRegion)
	}
	sc = sc.withDefaults()
	sc.NoOutage = true
	oldNames := slices.Clone(sc.Regions)
	sc.Regions = append(slices.Clone(sc.Regions), AddedRegion)
	s := newSim(sc, HomeTopologyChange)
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	defer s.cluster.Close()
	if err := s.createTables(ctx); err != nil {
		return nil, err
	}
	ts := &topologySim{s: s, tl: TopologyTimeline(sc.Lag), rng: rand.New(rand.NewPCG(sc.Seed, 0))}
	tl := ts.tl
	storeOpts := func(o *dynamostore.Options) { o.Now = s.clock.Now }
	for _, r := range s.cluster.Regions() {
		reg := multiregion.NewRegion(r.Name, r.Client, keysTable, storeOpts)
		ts.new = append(ts.new, reg)
		if slices.Contains(oldNames, r.Name) {
			ts.old = append(ts.old, reg)
		}
	}
	if err := ts.fleet(); err != nil {
		return nil, err
	}
	oldTopology := multiregion.Topology{Regions: oldNames}
	newTopology := multiregion.Topology{Regions: sc.Regions}
	ts.steps = []step{
		{at: 0, to: oldTopology},
		{at: tl.Prepare, to: newTopology},
		{at: tl.Switch, to: newTopology},
		{at: tl.Finish, to: newTopology},
	}
	s.before, s.route = ts.before, ts.route
	return s.play(ctx)
}

// fleet builds two processes per region: old ones in the old regions, each
// replaced at its own time within the deploy window, and new ones only in
// AddedRegion, started at DeployStart.
func (ts *topologySim) fleet() error {
	s, tl := ts.s, ts.tl
	service := func(regions []multiregion.Region, local string) (http.Handler, error) {
		router, err := multiregion.New(regions, s.routerOptions, func(o *multiregion.Options) {
			o.Mode = multiregion.HomeRegion
			o.Local = local
			o.TopologyRefresh = TopologyRefresh
		})
		if err != nil {
			return nil, err
		}
		return service(router, s.mrecEffect(s.cluster.Region(local))), nil
	}
	nOld := len(ts.old) * 2
	for _, r := range s.cluster.Regions() {
		var slots []*slot
		for range 2 {
			sl := &slot{deployAt: tl.DeployStart}
			var err error
			if sl.new, err = service(ts.new, r.Name); err != nil {
				return err
			}
			if r.Name != AddedRegion {
				if sl.old, err = service(ts.old, r.Name); err != nil {
					return err
				}
			}
			slots = append(slots, sl)
		}
		ts.slots = append(ts.slots, slots)
	}
	// Interleave the regions' replacements: region i's second process
	// goes after every region's first.
	order := make([]*slot, 0, nOld)
	for j := range 2 {
		for i := range ts.old {
			order = append(order, ts.slots[i][j])
		}
	}
	window := tl.DeployEnd - tl.DeployStart
	for k, sl := range order {
		sl.deployAt = tl.DeployStart + window*time.Duration(k)/time.Duration(max(nOld-1, 1))
	}
	return nil
}

// before runs the operator's steps that are due at virtual time at.
func (ts *topologySim) before(ctx context.Context, at time.Duration) error {
	for i := range ts.steps {
		st := &ts.steps[i]
		if st.done || st.at > at {
			continue
		}
		st.done = true
		if _, err := multiregion.AdvanceTopology(ctx, ts.new[0], st.to); err != nil {
			return err
		}
	}
	return nil
}

// route returns the process that serves a: one of its region's, drawn at
// random.
func (ts *topologySim) route(a *attempt) http.Handler {
	tl := ts.tl
	at := a.at
	region := a.op.region[a.n]
	slots := ts.slots[region]
	if ts.s.sc.Regions[region] == AddedRegion && at < tl.DeployStart {
		// Nothing runs in the new region yet: the client reaches an old one.
		region = (region + 1 + a.op.index) % len(ts.old)
		slots = ts.slots[region]
	}
	sl := slots[ts.rng.IntN(len(slots))]
	if sl.old != nil && at < sl.deployAt {
		return sl.old
	}
	return sl.new
}
