// Package multiregion is an idemkey.Store over the regional replicas of
// one DynamoDB global table, with the consistency model chosen explicitly
// at construction (New, Options.Mode). It is for services that run in
// several AWS regions and guard requests with one key table; handler.New,
// idemkey.New and the lambda front doors take it in place of a
// *dynamostore.Store.
//
// It is not a replication mechanism (global tables replicate), not a
// health checker (a region is unavailable when a call to it fails), and not
// a router of user traffic: it decides only where the key store's calls go.
// README.md in this directory has the decision table, the eviction and
// topology procedures and the simulation's figures.
//
// # Why naive use is wrong
//
// On a multi-Region eventually consistent (MREC) table a conditional write
// is checked only against the replica it is sent to, replication is
// asynchronous and concurrent writes of an item are resolved last writer
// wins. A retry that reaches region B before A's key record has replicated
// there executes again, and one of the two records then disappears
// (internal/regionsim, mode naive).
//
// # Modes
//
// SingleRegion (the default) is a *dynamostore.Store: one region.
//
// HomeRegion is for MREC tables. Every (scope, key) has one home region:
// Options.Pins[scope] when the scope is pinned, else the first region of
// HomeOrder (rendezvous hashing of SHA-256(scope, key, region) over the
// configured names), whose remaining order is the key's failover order.
// Every claim, commit and read of the key goes to its home, so its record
// has one writer region and last writer wins never has two versions to
// choose from. Staged effects commit with the key record in the home
// region, so effect tables must be global tables (or regional tables in
// every region) written only through the key's commit. A key homed
// elsewhere costs a cross-region round trip per call; pin scopes to the
// region their traffic comes from. When the home cannot be reached (a
// transport failure, a 5xx or throttling after the SDK's retries), Claim
// fails closed with a *RegionError wrapping the *dynamostore.StoreError:
// the Guard answers 503 with Retry-After and nothing executes.
//
// Strong is for multi-Region strongly consistent (MRSC) tables: calls go
// to Options.Local, and to the other regions when it is unreachable. A
// ReplicatedWriteConflictException is retried with bounded, jittered
// backoff (Options.ConflictRetry). A claim repeated in another region after
// a timed-out write may find its own first attempt: it answers 409 until
// that claim's lease ends, never a second execution.
//
// # Failover and its fence
//
// Options.Failover trades HomeRegion's unavailability for a stated risk: a
// claim whose home cannot be reached goes to the next reachable region of
// the key's order. A key that a region executed within the replication lag
// before that region became unreachable executes again where its retry
// goes instead: the failover region (its home went dark), the next region
// of the order (its failover region went dark too), or the home (its
// failover region went dark after the home came back, before its record
// replicated). Every failover decision is reported (EventFailover), and
// Reconcile reports every key that executed in two regions
// (EventTwoRegionExecution).
//
// A failover claim never writes the home record: it writes a failover
// record, the key record of the scope scope + "\x00failover@" + region,
// which only that region writes (so no replication conflict drops it).
// With failover, scopes holding a NUL byte are refused
// (dynamostore.ErrInvalidRequest), as are region names holding one, and
// scopes are limited to dynamostore.MaxScopeBytes minus room for the
// suffix. Before executing, a failover claim reads the home record and the
// other failover records as replicated in its region: a completed one
// replays, one in flight answers 409, another request's answers 422.
//
// A claim acquired in the home region with Failover on first reads the
// key's failover record in every other region, where it was written. A
// completed one is promoted (committed home, marked with PromotedHeader,
// answered as a replay); an abandoned one is retired in its region first,
// so its stalled owner can no longer commit; when that region cannot be
// read, the home's replica of the record decides, and an abandoned or
// unreadable one fails the request closed. This costs one cross-region
// consistent GetItem per other region for each first execution, nothing
// for replays; it also runs during a topology change, over the regions of
// both topologies. Reconcile promotes the failover records into absent
// home records and reports two-region executions; run it once the home is
// healthy again. The Store strips PromotedHeader from what it returns.
//
// A Store with Failover off does not run that fence, so a key a failover
// region executed executes again at home: keep Failover on in every
// process until a Reconcile run after the last EventFailover reports
// FailoverRecords == 0 with nothing Pending or Unreachable (never sooner
// than Lease + Retention after the last failover). Changing Pins or the
// region list re-homes keys: follow the topology procedure of README.md.
//
// # Eviction
//
// On an MREC table TTL deletes replicate and win last writer wins, so a
// replica's TTL delete of an expired version can erase the newer record its
// home wrote meanwhile (mode home-ttl-replicated). HomeRegion mode
// therefore refuses Eviction = EvictByTTL (ErrTTLReplicated): turn TTL off
// (dynamostore.EnsureTableWithoutTTL checks it) and run in each region a
// sweeper over its replica with dynamostore.SweepOptions.Region set to the
// region and SweepOptions.Owns to the Store's SweepOwner, so that every
// record is deleted only in the region that writes it. New does no I/O and
// cannot read the table's TTL setting, hence the declaration.
//
// # MRSC tables
//
// An MRSC table spans three regions (three replicas, or two and a witness,
// which serves no reads or writes): list only replica regions in New. MRSC
// tables support neither transactions nor TTL, so New refuses Strong with
// Effects = EffectsStaged (ErrTransactionsUnsupported; write each effect
// keyed by the idempotency key with attribute_not_exists and declare
// EffectsKeyed) and with Eviction = EvictByTTL (ErrTTLUnsupported; declare
// EvictBySweeper). Strong mode checks with one DescribeTable before its
// first call that MultiRegionConsistency is STRONG (else
// ErrNotStrongTable). HomeRegion mode refuses EffectsKeyed: on MREC a
// keyed effect's condition stops no execution in another region. On MREC,
// transactions are atomic only in their region: other regions may briefly
// see the key record without its effects; the home never does.
//
// # Clocks
//
// Lock and record expiries are written with the writer's clock and
// compared with the decider's, in any region. The guarantee assumes that
// every process and sweeper on the table agrees within MaxClockSkew and
// that a request finishes within Lease minus MaxClockSkew. Beyond that
// bound a process ahead of a claim's writer takes the key over while its
// owner runs (the handler runs twice; staged effects still commit once),
// and a retry near the end of Retention can find the record expired and
// execute again. New refuses, in HomeRegion and Strong modes, a store whose
// Lease is shorter than MinLease (modes home-skewed-clocks and
// home-skewed-clocks-beyond of the simulation show both sides).
package multiregion
