package sim

import (
	"flag"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemkey/idemkey/internal/ddbtest"
)

var (
	flagSeed  = flag.Uint64("seed", 0, "sim: run only this seed, and print its schedule (0: run the seed range)")
	flagFirst = flag.Uint64("first", 1, "sim: first seed of the range")
	flagSeeds = flag.Int("seeds", 200, "sim: number of seeds in the range")
	flagOps   = flag.Int("ops", 6, "sim: logical operations per seed")
	flagSkew  = flag.Duration("skew", 5*time.Second, "sim: bound of the processes' clock skew")
)

// shrinkBudget bounds the runs spent shrinking one violation.
const shrinkBudget = 400

// result is one seed's run.
type result struct {
	seed uint64
	r    *run
	err  error
}

// TestSimulation runs the seed range (or -seed) and fails with the
// shortest schedule found for each violating seed.
func TestSimulation(t *testing.T) {
	seeds := make([]uint64, 0, *flagSeeds)
	if *flagSeed != 0 {
		seeds = append(seeds, *flagSeed)
	} else {
		for i := range *flagSeeds {
			seeds = append(seeds, *flagFirst+uint64(i))
		}
	}
	gen := genOptions{ops: *flagOps, maxSkew: *flagSkew}
	started := time.Now()
	results := make([]result, len(seeds))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				r, err := execute(generate(seeds[i], gen), false)
				results[i] = result{seed: seeds[i], r: r, err: err}
			}
		})
	}
	for i := range seeds {
		next <- i
	}
	close(next)
	wg.Wait()
	t.Logf("%d seeds run in %v", len(seeds), time.Since(started).Round(time.Millisecond))

	var total figures
	total.faults = map[faultKind]int{}
	violating := 0
	reported := 0
	for _, res := range results {
		if res.err != nil {
			t.Fatalf("seed %d: %v", res.seed, res.err)
		}
		total.add(res.r.fig)
		if len(res.r.viol) == 0 {
			if *flagSeed != 0 {
				t.Logf("seed %d: no violation\n%s", res.seed, res.r.sc)
			}
			continue
		}
		violating++
		if reported == 0 {
			reported++
			t.Error(explain(res.r, gen))
			continue
		}
		w := worst(res.r.viol)
		t.Errorf("seed %d: violations %s, the worst (%s): %s", res.seed, kindsOf(res.r.viol), w.kind, w.msg)
	}
	line := fmt.Sprintf("sim seeds=%d ops=%d faults=%d (%s) crashes=%d ttl_deletes=%d sweeps=%d violations=%d",
		len(seeds), total.ops, total.faultTotal(), total.faultList(), total.crashes, total.ttlDeletes, total.sweeps, violating)
	t.Logf("attempts=%d executions=%d commits=%d replays=%d waits=%d (replayed %d, 409 %d) sweeper_evicted=%d sweeper_reclaimed=%d",
		total.attempts, total.executions, total.commits, total.replays, total.waits, total.waitReplays, total.waitInFlight, total.evicted, total.reclaimed)
	ddbtest.Report(t, line)
}

// explain shrinks a violating run and describes it: the seed, how to
// replay it, the configuration, and the shortest schedule found.
func explain(r *run, gen genOptions) string {
	first := worst(r.viol)
	small, runs := shrink(r.sc, first.kind, shrinkBudget)
	sr, err := execute(small, true)
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d violation(s), the worst (%s): %s\n", r.sc.seed, len(r.viol), first.kind, first.msg)
	fmt.Fprintf(&b, "replay: go test ./internal/sim -run 'TestSimulation$' -seed %d -ops %d -skew %v -v\n", r.sc.seed, gen.ops, gen.maxSkew)
	fmt.Fprintf(&b, "configuration:\n%s", r.sc)
	if err != nil {
		fmt.Fprintf(&b, "shrinking failed: %v\n", err)
		return b.String()
	}
	fmt.Fprintf(&b, "shortest scenario found (%d shrinking runs) still violating (%s):\n%s", runs, first.kind, small)
	b.WriteString("its schedule:\n")
	for _, line := range sr.trace {
		b.WriteString("  " + line + "\n")
	}
	return b.String()
}

// severity orders the kinds of violation, worst first: a duplicate
// execution, a waiter that executed, a foreign answer, a wrong answer, a lost effect or record, a
// live record taken (the cause of the first two), the harness's own.
var severity = []string{"a", "b", "w", "d", "c", "e", "r", "panic", "sim"}

// worst returns the first violation of the worst kind.
func worst(vs []violation) violation {
	for _, k := range severity {
		for _, v := range vs {
			if v.kind == k {
				return v
			}
		}
	}
	return vs[0]
}

func kindsOf(vs []violation) string {
	n := map[string]int{}
	for _, v := range vs {
		n[v.kind]++
	}
	parts := make([]string, 0, len(n))
	for _, k := range sortedKeys(n) {
		parts = append(parts, fmt.Sprintf("%s:%d", k, n[k]))
	}
	return strings.Join(parts, ",")
}

func (f *figures) add(g figures) {
	f.ops += g.ops
	f.attempts += g.attempts
	f.executions += g.executions
	f.commits += g.commits
	f.replays += g.replays
	f.waits += g.waits
	f.waitReplays += g.waitReplays
	f.waitInFlight += g.waitInFlight
	f.crashes += g.crashes
	f.ttlDeletes += g.ttlDeletes
	f.sweeps += g.sweeps
	f.evicted += g.evicted
	f.reclaimed += g.reclaimed
	for k, v := range g.faults {
		f.faults[k] += v
	}
}

func (f *figures) faultTotal() int {
	n := 0
	for _, k := range faultKinds {
		n += f.faults[k]
	}
	return n
}

func (f *figures) faultList() string {
	parts := make([]string, len(faultKinds))
	for i, k := range faultKinds {
		parts[i] = fmt.Sprintf("%s:%d", k, f.faults[k])
	}
	return strings.Join(parts, ",")
}

// report logs the figures line and, when IDEMKEY_RELIABILITY_REPORT names
// a file, appends it there, as the chaos and crash tests do.
// finding1 is the scenario of issue 9's finding 1: a retention (1 min)
// shorter than a request's lease (5 min from its deadline), a handler that
// runs 3 min, and a retry at minute 2 that reaches the key through the
// claim, DynamoDB's TTL or the sweeper.
func finding1(path string) *scenario {
	sc := &scenario{
		retention: time.Minute,
		lease:     30 * time.Second,
		procs:     []procSpec{{leaseMargin: 10 * time.Second}, {leaseMargin: 10 * time.Second}},
		ops: []opSpec{{id: "o1", scope: "alice", key: "order-1", amount: 100, attempts: []attemptSpec{
			{at: 0, proc: 0, work: []time.Duration{3 * time.Minute}, deadline: 5 * time.Minute, seed: 1},
			{at: 2 * time.Minute, proc: 1, work: []time.Duration{time.Second}, seed: 2},
		}}},
	}
	switch path {
	case "ttl":
		sc.ttl = []ttlSpec{{at: 90 * time.Second, seed: 1, p: 1}}
	case "sweeper":
		sc.sweeps = []sweepSpec{{at: 90 * time.Second, proc: 1, seed: 1}}
	}
	return sc
}

// TestSimulationRetentionShorterThanLease: a request whose lease (from its
// deadline) outlasts the retention keeps its key locked until the lease
// ends: a retry during the handler's run gets 409 and executes nothing,
// whether it reaches the key directly, after a TTL pass or after a sweep.
func TestSimulationRetentionShorterThanLease(t *testing.T) {
	for _, path := range []string{"claim", "ttl", "sweeper"} {
		t.Run(path, func(t *testing.T) {
			r, err := execute(finding1(path), true)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.viol) > 0 || r.fig.executions != 1 {
				t.Errorf("%d violation(s), %d executions (want 0 and 1); schedule:\n  %s", len(r.viol), r.fig.executions, strings.Join(r.trace, "\n  "))
			}
		})
	}
}

// TestSimulationIsDeterministic: a seed's run is the same every time: the
// same schedule, call by call, and the same figures.
func TestSimulationIsDeterministic(t *testing.T) {
	gen := genOptions{ops: 8, maxSkew: 5 * time.Second}
	for _, seed := range []uint64{3, 131} {
		var traces [2][]string
		var figs [2]string
		for i := range traces {
			r, err := execute(generate(seed, gen), true)
			if err != nil {
				t.Fatal(err)
			}
			traces[i] = r.trace
			figs[i] = fmt.Sprintf("%+v", r.fig)
		}
		if len(traces[0]) < 20 {
			t.Fatalf("seed %d: a schedule of %d lines is too short to tell", seed, len(traces[0]))
		}
		if figs[0] != figs[1] {
			t.Errorf("seed %d: figures differ:\n%s\n%s", seed, figs[0], figs[1])
		}
		for i := range min(len(traces[0]), len(traces[1])) {
			if traces[0][i] != traces[1][i] {
				t.Errorf("seed %d: schedules differ at line %d:\n%s\n%s", seed, i+1, traces[0][i], traces[1][i])
				break
			}
		}
		if len(traces[0]) != len(traces[1]) {
			t.Errorf("seed %d: schedules of %d and %d lines", seed, len(traces[0]), len(traces[1]))
		}
	}
}
