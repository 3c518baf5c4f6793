// Command multiregion-sim runs the multi-region idempotency simulation of
// package internal/regionsim and prints one line per mode:
//
//	mode=<name> requests=<n> logical_ops=<n> duplicates=<n> unavailable=<n>
//
// followed by one line of fence results for home-failover:
//
//	fence_reported=<n> failovers=<n> duplicates_in_lag_window=<n>
//
// Details (completed and abandoned operations, executions, the duplicate
// keys) go to stderr. Usage:
//
//	go run ./cmd/multiregion-sim -seed 1 [-ops 200] [-lag 2s] [-modes naive,home,home-failover,strong,...]
//
// -modes defaults to every mode of regionsim.Modes, FenceModes and
// CombinedModes, in order; package regionsim describes each.
//
// Each region is an embedded DynamoDB emulator in this process; time is
// virtual, so a run takes seconds whatever the lag and is the same for the
// same flags.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/idemkey/idemkey/internal/regionsim"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "multiregion-sim:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("multiregion-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sc regionsim.Scenario
	fs.Uint64Var(&sc.Seed, "seed", 1, "seed of the workload")
	fs.IntVar(&sc.Ops, "ops", 200, "logical operations")
	fs.DurationVar(&sc.Lag, "lag", 2*time.Second, "replication lag (0 for none)")
	fs.DurationVar(&sc.Span, "span", 10*time.Second, "period over which operations start")
	fs.Float64Var(&sc.LossRate, "loss", 0.4, "probability that an answer is lost after the server executed the request")
	fs.DurationVar(&sc.OutageStart, "outage-start", 4*time.Second, "when the outage region is cut off")
	fs.DurationVar(&sc.OutageEnd, "outage-end", 7*time.Second, "when it comes back (not after outage-start: no outage)")
	regions := fs.String("regions", strings.Join(regionsim.DefaultRegions, ","), "region names; the first one has the outage")
	var all []string
	for _, m := range slices.Concat(regionsim.Modes, regionsim.FenceModes, regionsim.CombinedModes) {
		all = append(all, string(m))
	}
	modes := fs.String("modes", strings.Join(all, ","), "modes to run, comma-separated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	// The flags' zero values mean "none", not "default".
	if sc.Lag == 0 {
		sc.Lag = -1
	}
	if sc.LossRate == 0 {
		sc.LossRate = -1
	}
	if sc.OutageEnd <= sc.OutageStart {
		sc.NoOutage = true
	}
	sc.Regions = strings.Split(*regions, ",")
	var fence *regionsim.Result
	for _, name := range strings.Split(*modes, ",") {
		mode, err := regionsim.ParseMode(strings.TrimSpace(name))
		if err != nil {
			return err
		}
		res, err := regionsim.Run(ctx, mode, sc)
		if err != nil {
			return fmt.Errorf("mode %s: %w", mode, err)
		}
		fmt.Fprintln(stdout, res.Line())
		fmt.Fprintf(stderr, "mode=%s completed=%d abandoned=%d executions=%d failovers=%d fence_reported=%d duplicates_in_lag_window=%d leftover=%d duplicate_keys=%v\n",
			mode, res.Completed, res.Abandoned, res.Executions, res.Failovers, res.FenceReported, res.DuplicatesInLagWindow, res.Leftover, res.DuplicateKeys)
		if mode == regionsim.HomeFailover {
			fence = res
		}
	}
	if fence != nil {
		fmt.Fprintf(stdout, "fence_reported=%d failovers=%d duplicates_in_lag_window=%d\n",
			fence.FenceReported, fence.Failovers, fence.DuplicatesInLagWindow)
		fmt.Fprintf(stderr, "fence_keys=%v\n", fence.FenceKeys)
	}
	return nil
}
