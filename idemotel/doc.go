// Package idemotel publishes idemkey's observations in OpenTelemetry:
// metrics for every request a Guard handles and for each sweep, and a
// span per guarded request. It uses the OpenTelemetry API only; the
// application chooses the SDK and the exporters, and passes their
// providers in Options (the global ones by default, as the OpenTelemetry
// contrib instrumentations do).
//
// New returns an Observer to set as idemkey.Options.Observer (in
// handler.Options.Guard, lambda.FuncOptions.Guard, ...):
//
//   - the counter idemkey.requests ({request}), with the attributes
//     outcome, mode and front_door (and class, the dynamostore.Class, for
//     the permanent outcome);
//   - the histograms idemkey.claim.duration, idemkey.run.duration and
//     idemkey.commit.duration (seconds), with the same attributes, each
//     recorded when the request went through that phase;
//   - a span idemkey.guard per request, a child of the span in the
//     request's context (the incoming request's, from otelhttp or the
//     Lambda instrumentation), parent of the spans of what runs inside:
//     the store's DynamoDB calls (instrumented by the AWS SDK's own
//     instrumentation) and the guarded function. Its events are claim and
//     commit, at the instants those phases ended; its status is Error,
//     described by the outcome, when the outcome is one to look at (lock
//     lost, unavailable, permanent, effect condition failed, corrupt
//     record, error, and a function that failed or panicked).
//
// Every attribute value comes from a small fixed set (outcomes, modes,
// front doors, classes, regions, table names), so the metrics' cardinality
// is bounded. No attribute carries the key, the scope, a body or a header:
// the span has idemkey.key_hash (idemkey.Event.KeyHash, a truncated
// HMAC of the scope and key under the Guard's secret, so that a guessed
// key cannot be confirmed from a trace) to find the request's log record,
// and nothing else about the key.
//
// # Cost per request
//
// The Observer adds next to nothing to what the OpenTelemetry SDK itself
// costs for the same data. The request instruments use attribute sets
// built once per combination of outcome, mode, front door and class, so a
// request allocates nothing for its measurements. A span that is not
// sampled costs what the SDK's tracer takes to start it and nothing more:
// no attribute, no option, no context of the Observer's. A sampled span
// costs the SDK's span with its two events and up to eight attributes,
// which the Observer passes from a buffer it reuses. Over the API's noop
// providers (packages go.opentelemetry.io/otel/trace/noop and
// go.opentelemetry.io/otel/metric/noop) it starts no span and records no
// measurement at all.
//
// On the 2-vCPU machine of BENCHMARKS.md (section "Observer overhead"),
// the SDK's metrics with the noop tracer cost about 1.5 µs per request,
// under a budget of 2 µs. With the SDK's tracing, the SDK's own work
// exceeds that budget: starting a span that the sampler then drops costs
// every request about 0.75 µs on top of the metrics' 1.2 to 1.5 µs, and
// each sampled span several microseconds more. The budget therefore holds
// for metrics only (the noop tracer); with traces, a sampler that keeps a
// small fraction of the requests
// (sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))) comes
// closest, about 3 µs per request at 1 %. Every request is counted,
// whatever the sampler decides.
//
// RecordSweep turns a sweeper's report into the idemkey.sweep.*
// instruments, and the Observer counts a multi-region store's routing
// decisions (idemkey.RoutingObserver) in idemkey.multiregion.decisions.
package idemotel
