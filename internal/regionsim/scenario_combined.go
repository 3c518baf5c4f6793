package regionsim

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/idemkey/idemkey/multiregion"
)

// The combined scenarios: scripted episodes (as the fence scenarios) that
// join the options a deployment runs together. In each of them the
// processes of every region read a clock of their own, off the
// replicator's by a skew drawn from the seed within MaxSkew either way,
// every region runs its regional sweeper, and topology changes follow the
// procedure of multiregion/README.md (prepare, wait, deploy, switch, wait
// twice the lag, finish), written through the first region.
const (
	// HomeRehomeSweep (HomeRegion, Failover off): a request claims its
	// key in its home X and stalls (an abandoned claim); the key's scope
	// is pinned to another region Y; after the change a retry executes in
	// Y; within the lag every region sweeps; then a retry. A duplicate
	// when X's sweeper deletes its stale copy of the key and that delete,
	// the later write, erases Y's record.
	HomeRehomeSweep Mode = "home-rehome-sweep"
	// HomeFailoverChain (HomeRegion with Failover, three regions): the
	// home A is cut off. Half the episodes: a request fails over to B and
	// stalls past its lease (its claim replicates to C); B is cut off too
	// and a retry fails over to C; B comes back and the stalled request
	// commits. The other half execute in B and cut B off within the lag,
	// before B's record left it (the stated failover risk). Then A is back
	// and a last retry reaches it.
	HomeFailoverChain Mode = "home-failover-chain"
	// HomeFailoverTopology (HomeRegion with Failover): the home X is cut
	// off and a request fails over to Y, the key's first failover region,
	// where it completes or stalls; X is back; the key's scope is pinned
	// to Y (failover during the change: X is cut off again at the switch
	// and a retry is refused), and after the change retries reach Y,
	// the key's new home; the stalled request resumes.
	HomeFailoverTopology Mode = "home-failover-topology"
	// HomeRegionRemoved (HomeRegion with Failover): every episode leaves
	// records written by the last region R, keys homed there and failovers
	// into it, and retries them from elsewhere; then R is removed by the
	// topology procedure (finished Lease + Retention after the last
	// failover, as the README asks), the records expire and the remaining
	// regions sweep. Result.Leftover counts R's records the remaining
	// replicas still hold.
	HomeRegionRemoved Mode = "home-region-removed"
	// HomeSkewedClocks (HomeRegion with Failover): every region's clock is
	// off by up to half multiregion.MaxClockSkew either way, so any two
	// agree within the bound. A request claims its key from one region's
	// process and runs until MaxClockSkew (plus 100 ms) before its lease
	// ends, by its own clock; a retry reaches another region's process
	// then. After the commit, every region sweeps and a retry reaches a
	// third region's process MaxClockSkew (plus 100 ms) before the record
	// expires, by its writer's clock. No duplicate: the first retry is
	// answered 409, the second replays.
	HomeSkewedClocks Mode = "home-skewed-clocks"
	// HomeSkewedClocksBeyond is HomeSkewedClocks with clocks off by up to
	// twice MaxClockSkew either way: beyond the bound. A retry whose
	// process runs ahead of the claim's writer by more than the lease left
	// takes the key over and runs the handler a second time (its commit
	// wins, the stalled one is fenced: an execution, no duplicate effect);
	// a retry, or the home's sweeper, ahead of the record's writer by more
	// than the retention left sees it expired, and the key executes again:
	// a duplicate.
	HomeSkewedClocksBeyond Mode = "home-skewed-clocks-beyond"
)

// CombinedModes are the combined scenarios, which ParseMode knows too.
var CombinedModes = []Mode{HomeRehomeSweep, HomeFailoverChain, HomeFailoverTopology, HomeRegionRemoved, HomeSkewedClocks, HomeSkewedClocksBeyond}

// MaxSkew bounds the clock skew of a combined scenario's regions (but
// the skewed-clocks scenarios', see skewBound).
const MaxSkew = 250 * time.Millisecond

// skewBound returns how far a region's clock may be off, either way, in a
// combined scenario.
func skewBound(mode Mode) time.Duration {
	switch mode {
	case HomeSkewedClocks:
		return multiregion.MaxClockSkew / 2
	case HomeSkewedClocksBeyond:
		return 2 * multiregion.MaxClockSkew
	}
	return MaxSkew
}

// combine prepares a combined scenario: the regions' skews.
func (f *fenceSim) combine() error {
	if !slices.Contains(CombinedModes, f.mode) {
		return nil
	}
	if (f.mode == HomeFailoverChain || f.mode == HomeRegionRemoved) && len(f.names) < 3 {
		return fmt.Errorf("regionsim: mode %s needs three regions", f.mode)
	}
	rng := rand.New(rand.NewPCG(f.sc.Seed, 1<<40))
	f.skew = map[string]time.Duration{}
	bound := skewBound(f.mode)
	for _, name := range f.names {
		f.skew[name] = time.Duration(rng.Int64N(int64(2*bound)+1)) - bound
	}
	if f.mode == HomeRegionRemoved {
		f.after = f.removeRegion
	}
	return nil
}

// firstTopology writes the table's first topology record, the fleet's,
// in a combined scenario, so that no outage delays it.
func (f *fenceSim) firstTopology() error {
	if f.skew == nil {
		return nil
	}
	if _, err := multiregion.AdvanceTopology(f.ctx, f.regions[0], f.topology()); err != nil {
		return err
	}
	return f.pump(f.sc.Lag + time.Second)
}

// topology is the topology the fleet is configured with.
func (f *fenceSim) topology() multiregion.Topology {
	return multiregion.Topology{Regions: slices.Clone(f.live), Pins: maps.Clone(f.pins)}
}

// pinned returns the fleet's topology with scope pinned to region.
func (f *fenceSim) pinned(scope, region string) multiregion.Topology {
	t := f.topology()
	if t.Pins == nil {
		t.Pins = map[string]string{}
	}
	t.Pins[scope] = region
	return t
}

// change moves the table's topology record to next by the procedure:
// prepare, wait, deploy the fleet configured with next, switch, run
// atSwitch (if set), wait twice the lag, finish, wait.
func (f *fenceSim) change(next multiregion.Topology, atSwitch func() error) error {
	const margin = 500 * time.Millisecond
	settle := f.sc.Lag + TopologyRefresh + margin
	step := func() error {
		_, err := multiregion.AdvanceTopology(f.ctx, f.regions[0], next)
		return err
	}
	if err := step(); err != nil { // prepare
		return err
	}
	if err := f.pump(settle); err != nil {
		return err
	}
	f.live, f.pins = slices.Clone(next.Regions), maps.Clone(next.Pins)
	if err := f.fleet(); err != nil {
		return err
	}
	if err := step(); err != nil { // switch
		return err
	}
	if atSwitch != nil {
		if err := atSwitch(); err != nil {
			return err
		}
	}
	if err := f.pump(2*f.sc.Lag + TopologyRefresh + margin); err != nil {
		return err
	}
	if err := step(); err != nil { // finish
		return err
	}
	return f.pump(settle)
}

// withinLag advances the clock by less than the lag.
func (f *fenceSim) withinLag(rng *rand.Rand) {
	f.clock.Advance(time.Duration(1+rng.IntN(int(f.sc.Lag/time.Millisecond)-1)) * time.Millisecond)
}

func (f *fenceSim) rehome(o *op, rng *rand.Rand) error {
	x := f.topology().Home(o.scope, o.key)
	resume := f.stalledAttempt(o, f.other(rng)) // claims in x, stalls
	y := f.other(rng, x)
	if err := f.change(f.pinned(o.scope, y), nil); err != nil {
		return err
	}
	f.attempt(o, f.other(rng)) // executes in y, after x's lease
	f.withinLag(rng)
	if err := f.evict(); err != nil {
		return err
	}
	if err := f.pump(f.sc.Lag + time.Second); err != nil {
		return err
	}
	f.attempt(o, f.other(rng))
	resume()
	return nil
}

func (f *fenceSim) chain(o *op, rng *rand.Rand) error {
	order := f.topology().Order(o.scope, o.key)
	a, b, c := order[0], order[1], order[2]
	f.cluster.CutOff(a)
	if rng.IntN(2) == 0 {
		resume := f.stalledAttempt(o, f.other(rng, a)) // fails over to b, stalls
		if err := f.pump(fenceLease + time.Duration(1+rng.IntN(3))*time.Second); err != nil {
			return err
		}
		f.cluster.CutOff(b)
		f.attempt(o, c) // fails over to c
		f.cluster.Restore(b)
		resume()
	} else {
		f.lagKeys[o.id()] = true
		f.attempt(o, f.other(rng, a)) // executes in b
		f.withinLag(rng)
		f.cluster.CutOff(b)
		f.attempt(o, c) // c has not seen b's record
		f.cluster.Restore(b)
	}
	f.cluster.Restore(a)
	if err := f.pump(f.sc.Lag + time.Second); err != nil {
		return err
	}
	f.attempt(o, f.other(rng))
	return nil
}

func (f *fenceSim) failoverTopology(o *op, rng *rand.Rand) error {
	order := f.topology().Order(o.scope, o.key)
	x, y := order[0], order[1]
	f.cluster.CutOff(x)
	resume := func() {}
	if rng.IntN(2) == 0 {
		resume = f.stalledAttempt(o, f.other(rng, x)) // fails over to y, stalls
	} else {
		f.attempt(o, f.other(rng, x)) // fails over to y, completes
	}
	f.cluster.Restore(x)
	if err := f.pump(f.sc.Lag + time.Second); err != nil {
		return err
	}
	err := f.change(f.pinned(o.scope, y), func() error {
		f.cluster.CutOff(x)
		f.attempt(o, f.other(rng, x)) // failover is suspended: refused
		f.cluster.Restore(x)
		return nil
	})
	if err != nil {
		return err
	}
	f.attempt(o, f.other(rng)) // at y, the key's new home
	resume()
	if err := f.pump(f.sc.Lag + time.Second); err != nil {
		return err
	}
	f.attempt(o, f.other(rng))
	return nil
}

// removedRegion leaves records written by the region to remove (the last
// one): a key homed there executes there; another fails over into it
// (every region before it in the key's order cut off). Each is retried
// from another region.
func (f *fenceSim) removedRegion(o *op, rng *rand.Rand) error {
	r := f.names[len(f.names)-1]
	order := f.topology().Order(o.scope, o.key)
	i := slices.Index(order, r)
	for _, x := range order[:i] {
		f.cluster.CutOff(x)
	}
	f.attempt(o, r)
	for _, x := range order[:i] {
		f.cluster.Restore(x)
	}
	if err := f.pump(f.sc.Lag + time.Second); err != nil {
		return err
	}
	f.attempt(o, f.other(rng, r))
	return nil
}

// removeRegion removes the last region by the procedure, finishing no
// sooner than Lease + Retention after its last failover, lets every
// record expire, sweeps the remaining regions and counts the removed
// region's records left in their replicas.
func (f *fenceSim) removeRegion() error {
	r := f.names[len(f.names)-1]
	next := f.topology()
	next.Regions = slices.DeleteFunc(next.Regions, func(n string) bool { return n == r })
	if err := f.pump(fenceLease + fenceRetention); err != nil {
		return err
	}
	if err := f.change(next, nil); err != nil {
		return err
	}
	if err := f.pump(fenceLease + fenceRetention + time.Second); err != nil {
		return err
	}
	if err := f.evict(); err != nil {
		return err
	}
	if err := f.drain(f.ctx); err != nil {
		return err
	}
	for _, name := range f.live {
		items, err := f.cluster.Items(f.ctx, name, keysTable)
		if err != nil {
			return err
		}
		for _, it := range items {
			if str(it["region"]) == r {
				f.res.Leftover++
			}
		}
	}
	return nil
}

// skewedClocks plays the two edges the clock skew moves: the end of a
// claim's lease and the end of a record's retention, each reached by
// another region's process than the one that wrote the record, whose clock
// is off by the regions' skews.
func (f *fenceSim) skewedClocks(o *op, rng *rand.Rand) error {
	const margin = 100 * time.Millisecond
	p := f.other(rng)
	resume := f.stalledAttempt(o, p) // claims in the home with p's clock, stalls
	if err := f.pump(fenceLease - multiregion.MaxClockSkew - margin); err != nil {
		return err
	}
	committed := f.clock.Now()
	f.attempt(o, f.other(rng, p)) // within the bound: 409
	resume()
	if err := f.pump(f.sc.Lag + time.Second); err != nil {
		return err
	}
	home := f.topology().Home(o.scope, o.key)
	rec, err := f.regions[slices.Index(f.names, home)].Store.Get(f.ctx, o.scope, o.key)
	if err != nil {
		return fmt.Errorf("the home record after the commit: %w", err)
	}
	// Whichever commit won, it was made at committed by the clock of its
	// process, which wrote Completed and Expires. The record is live
	// through the second Expires names, until Expires + 1s by that clock.
	writerSkew := rec.Completed.Sub(committed)
	advanceTo(f.clock, rec.Expires.Add(time.Second-writerSkew-multiregion.MaxClockSkew-margin))
	if _, err := f.cluster.Pump(f.ctx); err != nil {
		return err
	}
	if err := f.evict(); err != nil {
		return err
	}
	f.attempt(o, f.other(rng)) // within the bound: a replay
	return nil
}
