package sim

import "slices"

// has reports whether the run found a violation of kind.
func (r *run) has(kind string) bool {
	return slices.ContainsFunc(r.viol, func(v violation) bool { return v.kind == kind })
}

// shrink looks for a smaller scenario that still shows a violation of
// kind: it tries, greedily and from the coarsest, to drop an operation, an
// attempt, a crash, a TTL pass, a sweep, a fault, a work segment, a
// deadline, a handler failure, a cache or a skew, keeping each reduction
// that keeps the violation, until none does (or budget runs are spent).
// Each reduced scenario is run from scratch, so the result replays alone.
func shrink(sc *scenario, kind string, budget int) (*scenario, int) {
	best, runs := sc, 0
	for {
		improved := false
		for _, cand := range reductions(best) {
			if runs >= budget {
				return best, runs
			}
			runs++
			if r, err := execute(cand, false); err == nil && r.has(kind) {
				best, improved = cand, true
				break
			}
		}
		if !improved {
			return best, runs
		}
	}
}

// reductions lists the scenarios one step smaller than sc, coarsest first.
func reductions(sc *scenario) []*scenario {
	var out []*scenario
	with := func(edit func(c *scenario)) {
		c := sc.clone()
		edit(c)
		out = append(out, c)
	}
	for i := range sc.ops {
		with(func(c *scenario) { c.ops = slices.Delete(c.ops, i, i+1) })
	}
	for i, op := range sc.ops {
		if len(op.attempts) < 2 {
			continue
		}
		for j := range op.attempts {
			with(func(c *scenario) { c.ops[i].attempts = slices.Delete(c.ops[i].attempts, j, j+1) })
		}
	}
	for i := range sc.crashes {
		with(func(c *scenario) { c.crashes = slices.Delete(c.crashes, i, i+1) })
	}
	for i := range sc.sweeps {
		with(func(c *scenario) { c.sweeps = slices.Delete(c.sweeps, i, i+1) })
	}
	for i := range sc.ttl {
		with(func(c *scenario) { c.ttl = slices.Delete(c.ttl, i, i+1) })
	}
	for i, op := range sc.ops {
		for j, a := range op.attempts {
			for _, k := range sortedFaults(a.faults) {
				with(func(c *scenario) { delete(c.ops[i].attempts[j].faults, k) })
			}
			if len(a.work) > 1 {
				with(func(c *scenario) { c.ops[i].attempts[j].work = c.ops[i].attempts[j].work[:1] })
			}
			if a.deadline > 0 {
				with(func(c *scenario) { c.ops[i].attempts[j].deadline = 0 })
			}
			if a.fail {
				with(func(c *scenario) { c.ops[i].attempts[j].fail = false })
			}
		}
	}
	for i, s := range sc.sweeps {
		for _, k := range sortedFaults(s.faults) {
			with(func(c *scenario) { delete(c.sweeps[i].faults, k) })
		}
	}
	for i := range sc.procs {
		if !sc.uses(i) && len(sc.procs) > 1 {
			with(func(c *scenario) { c.dropProc(i) })
		}
	}
	for i, p := range sc.procs {
		if p.cacheTTL > 0 {
			with(func(c *scenario) { c.procs[i].cacheTTL = 0 })
		}
		if p.leaseMargin > 0 {
			with(func(c *scenario) { c.procs[i].leaseMargin = 0 })
		}
		if p.wait > 0 {
			with(func(c *scenario) { c.procs[i].wait = 0 })
		}
		if p.skew != 0 {
			with(func(c *scenario) { c.procs[i].skew = 0 })
		}
	}
	return out
}

func sortedFaults(f map[int]faultKind) []int {
	idx := make([]int, 0, len(f))
	for i := range f {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	return idx
}

// uses reports whether anything in sc runs on process i.
func (sc *scenario) uses(i int) bool {
	for _, op := range sc.ops {
		for _, a := range op.attempts {
			if a.proc == i {
				return true
			}
		}
	}
	return slices.ContainsFunc(sc.crashes, func(c crashSpec) bool { return c.proc == i }) ||
		slices.ContainsFunc(sc.sweeps, func(s sweepSpec) bool { return s.proc == i })
}

// dropProc removes the unused process i and renumbers the others.
func (sc *scenario) dropProc(i int) {
	sc.procs = slices.Delete(sc.procs, i, i+1)
	renumber := func(p *int) {
		if *p > i {
			*p--
		}
	}
	for o := range sc.ops {
		for a := range sc.ops[o].attempts {
			renumber(&sc.ops[o].attempts[a].proc)
		}
	}
	for c := range sc.crashes {
		renumber(&sc.crashes[c].proc)
	}
	for s := range sc.sweeps {
		renumber(&sc.sweeps[s].proc)
	}
}
