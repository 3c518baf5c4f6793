// Package sim is a deterministic, seeded simulation of the idempotency
// protocol. It has no API: everything is in its tests.
//
// # The model
//
// Each seed draws a scenario: a store configuration (retention, lease), a
// bound on clock skew, one to four server processes, a few logical
// operations over few keys and two scopes, process crashes, passes of
// DynamoDB's TTL process and sweeps. The code under test is the real one:
// the handler middleware (called directly with httptest, no network)
// over idemkey.Guard (ClaimFirst or OneTrip, with or without an
// idemkey.Cache), dynamostore.Store, txn and dynamostore.Sweeper, through
// the real aws-sdk-go-v2 client, against the embedded emulator
// (localstack.NewHandler, always: never AWS_ENDPOINT_URL_DYNAMODB, because
// determinism needs its serialised semantics), reached by an in-process
// HTTP client.
//
//   - Time is virtual. A cooperative scheduler runs one actor goroutine at a
//     time (an attempt of a client, or a sweep); an actor parks at every
//     HTTP attempt of the SDK (a latency before and after DynamoDB applies
//     it) and in the handler's work, and the scheduler resumes the earliest
//     wake-up. Every process reads its clock (dynamostore.Options.Now,
//     idemkey.Options.Now, the sweeper's Now) as virtual time plus its own
//     skew. A run depends only on its scenario: replaying a seed replays
//     the run.
//   - Each process is ClaimFirst or OneTrip, with or without a cache, and
//     takes its leases from the store or from the request's deadline
//     (handler.LeaseFromDeadline), and makes duplicates in flight wait
//     for their first copy (idemkey.Options.WaitInFlight: 2 s, 20 s or
//     the lease) or not. A waiter's sleeps run on virtual time (its
//     context's waitclock), so its reads are scheduled and faulted like
//     any call. A request with a deadline is cut off at it, as a Lambda
//     invocation is: its later calls never reach DynamoDB.
//   - Clients send each operation several times with the same key, at
//     random moments: at once (a duplicate in flight), seconds later,
//     around the lease, around the retention and past it. Operations of
//     the same scope may share a key with different bodies (422 expected);
//     operations of different scopes share keys too.
//   - The handler records its execution in memory (the external effect),
//     works for a while (shorter or longer than the lease, sometimes longer
//     than the retention), stages one effect item on its txn.Tx and
//     answers 201, or sometimes 500, with a body naming its scope, key,
//     operation, fingerprint and execution.
//   - Faults at any SDK attempt: ThrottlingException, InternalServerError,
//     a timeout before DynamoDB saw the call, a timeout after it applied
//     it. The SDK keeps its own retries (three attempts, no backoff), so an
//     ambiguous call is sent again. A process crash, planned or drawn at
//     any call, kills its instance: the in-flight attempts' later calls
//     fail without reaching DynamoDB and their clients see the connection
//     drop; the process restarts after a downtime with an empty cache.
//   - A TTL pass deletes some of the items whose exp has passed by true
//     time, each with a DeleteItem conditioned on exp. A sweep runs
//     dynamostore.Sweeper with one segment on a process's clock, its calls
//     scheduled and faulted like the others.
//
// # The invariants
//
// Every key-table write DynamoDB applied is recorded with the item it
// replaced (read directly from the emulator), and every answer is kept.
// A violation is one of:
//
//	r  a live record was taken by someone other than its owner: an
//	   in-progress record overwritten or deleted (claim, TTL, sweeper)
//	   before its lock's end, or a completed one before its exp second
//	   passed, by true time minus the skew bound
//	b  a ClaimFirst execution started while another ClaimFirst execution of
//	   the same key still ran (not returned, not dead) under a lock live by
//	   true time minus the skew bound; a handler that outlives its own
//	   lease may be overlapped after it
//	a  a key's effects were committed twice while the first commit's record
//	   lived (the second claim came before its exp second passed, minus the
//	   skew bound)
//	c  an answer that is not: the attempt's own committed 201; a replay,
//	   byte for byte, of a committed 201 of the same operation, never
//	   marked as a replay when it was the attempt's own execution, and
//	   never served from a cache past its record's exp second (on the
//	   process's clock); the handler's own 500; 422 for a key another
//	   operation of the scope uses (and not from a cache past the key's
//	   last record); 409, 503 or a dropped connection
//	d  an answer carrying another operation's, scope's or fingerprint's
//	   response
//	w  a ClaimFirst request that waited for a duplicate in flight executed
//	   (a waiter answers a replay, 422 or 409, never in the first copy's
//	   place); what a waiter answers is checked by c and d like any answer,
//	   and whether anyone executed under a live lock by b
//	e  an effect item without its key record's commit, a live completed
//	   record without its effect, or the last commit of a key whose record
//	   must still live missing from the table
//
// A violation fails TestSimulation with the seed, the command that
// replays it, the configuration, and the shortest scenario found by
// shrinking (operations, attempts, crashes, TTL passes, sweeps, faults,
// second work segments, deadlines, handler failures, caches,
// deadline-based leases, skews and unused processes are dropped one at a
// time while a violation of the same kind remains) with its schedule:
// every call, fault, crash, deletion, execution and answer on virtual
// time. Only the first violating seed of a range is shrunk; the others are
// listed with their worst violation.
//
// # Running it
//
//	go test ./internal/sim                               # the CI range: seeds 1-200
//	go test ./internal/sim -run 'TestSimulation$' -seed 30 -v    # replay one seed, print its scenario
//	go test ./internal/sim -run 'TestSimulation$' -first 1000 -seeds 20000 -ops 10 -timeout 2h
//
// Flags: -seed (one seed), -first and -seeds (the range), -ops (operations
// per seed), -skew (the skew bound). The figures line ("sim seeds=...") is
// logged (with the waits: how many attempts waited, and were answered by
// a replay or 409) and appended to the file named by
// IDEMKEY_RELIABILITY_REPORT, as
// the chaos and crash tests do. TestSimulationRetentionShorterThanLease
// replays issue 9's finding 1 through the claim, a TTL pass and a sweep;
// TestSimulationIsDeterministic checks that a seed's schedule is the same
// on every run.
//
// # What it does not model
//
// Real DynamoDB's concurrency: the emulator applies calls one at a time,
// so TransactionConflict, TransactionInProgressException and a transaction
// still running while its token is retried do not occur. Other backends
// (moto, AWS) are not simulated. Wall-clock timeouts (the Guard's write
// timeout is set to an hour of wall time; timeouts are injected as faults),
// network partitions between processes, clocks that drift or jump during
// a run, throttling cancellation reasons inside transactions, the
// multi-region router, the Lambda front doors, operator releases
// (ReleaseKey) and saved sweep cursors are outside the model.
package sim
