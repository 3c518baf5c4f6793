// Package multiregion is an idemkey.Store over the regional replicas of
// one DynamoDB global table, with the consistency model chosen explicitly
// at construction (New, Options.Mode). It is for services that run in
// several AWS regions and guard requests with one key table; handler.New,
// idemkey.New and the lambda front doors take it in place of a
// *dynamostore.Store.
//
// It is not a replication mechanism (DynamoDB global tables replicate), not
// a health checker (a region is unavailable when a call to it fails), and
// not a router of user traffic between regions: it decides only where the
// key store's calls go.
//
// # Why naive use is wrong
//
// On a multi-Region eventually consistent (MREC) global table, the default,
// a conditional write is checked only against the replica of the region it
// is sent to, replication is asynchronous (typically under a second, with no
// SLA) and concurrent writes of one item in two regions are resolved last
// writer wins. A client that times out in region A after A executed its
// request, and retries into region B before A's key record has replicated,
// finds no key in B: the request executes twice. Its two key records then
// collide and one of them silently disappears, so the key store no longer
// even shows that it happened. The simulation in internal/regionsim shows
// it (mode naive).
//
// # Modes
//
// SingleRegion (the default) is a *dynamostore.Store: one region.
//
// HomeRegion is for MREC tables. Every (scope, key) has one home region:
// Options.Pins[scope] when the scope is pinned, else the first region of
// HomeOrder, rendezvous hashing of SHA-256(scope, key, region) over the
// configured region names, whose remaining order is the key's failover
// order. Every claim, commit and read of the key goes to its home region,
// from whichever region the request arrives in (the Store holds a client
// for every region). Its key record therefore has one writer region: its
// conditional writes are checked against a replica that has seen every
// earlier write of the item, and last-writer-wins never has two versions
// to choose from. Staged effects commit in the same TransactWriteItems as
// the key record, in the home region; that is why the effect tables must be
// global tables too (or regional tables in every region, if effects need
// not be replicated), written only through the key's commit. Cost: a key
// homed in another region costs a cross-region round trip per DynamoDB
// call; pin scopes to the region their traffic comes from to avoid it.
//
// When the home region cannot be reached (a transport failure, a 5xx or
// throttling after the SDK's retries), HomeRegion fails closed: Claim
// returns a *RegionError that wraps the *dynamostore.StoreError, the Guard
// answers 503 with Retry-After, and nothing executes. No duplicate is
// possible (on a table where no Store with Failover has run within the
// records' lifetime: see below); the keys homed in that region are
// unavailable for the outage.
//
// Strong is for multi-Region strongly consistent (MRSC) tables, whose
// conditional writes are linearizable across regions: any region may serve
// any key. Calls go to Options.Local, and to the other regions when it is
// unreachable (which is safe on MRSC). A ReplicatedWriteConflictException
// (another region is writing the same item) is retried with bounded,
// jittered backoff (Options.ConflictRetry); the SDK's retryer does not retry
// it. A claim whose write timed out in one region and is repeated in
// another may find its own first attempt applied, as another request's
// claim: it answers 409 until that claim's lease runs out, never a second
// execution.
//
// # Failover and its fence
//
// Options.Failover lets HomeRegion trade that unavailability for a stated
// risk: a claim whose home region cannot be reached goes to the next
// reachable region of the key's order. The risk: a key that a region
// executed within the replication lag before that region became
// unreachable, whose record (home or failover) had not left it, executes
// again in the region its retry reaches instead:
//
//   - executed in its home, which then went dark: again in the failover
//     region;
//   - executed in a failover region, which then went dark too while the
//     home was still dark: again in the next region of the key's order
//     (so a key can execute once per region it fails over to);
//   - executed in a failover region, which went dark after the home came
//     back and before its failover record had replicated there: again in
//     the home (the fence below finds nothing to read).
//
// Duplicates are possible for exactly those keys (and for the keys a
// Store with Failover off executes again, below), and every one of them is
// reported: each failover decision goes to Options.Observer
// (EventFailover), and Reconcile reports every key that executed in two
// regions (EventTwoRegionExecution), home and failover or two failover
// regions.
//
// The fence is designed to survive last-writer-wins. A failover claim never
// writes the key's home record (the item whose home region may hold an
// unreplicated version). It writes a failover record under its own
// partition key, the scope encoded as
//
//	scope + "\x00failover@" + region
//
// with the same key, so the item is the key record of that scope and key.
// Only that region ever writes that item, so no replication conflict can
// drop it, and it carries its region (Record.Region) and its execution's
// lock token. The encoding cannot collide with any request's record: a
// record's partition key (the scope's byte length, a colon, the scope, the
// key) is injective
// over (scope, key) pairs, with failover the Store refuses scopes that
// hold a NUL byte (dynamostore.ErrInvalidRequest) and New refuses
// region names that do, so a failover scope (which holds one) is never a
// request's scope, and two failover scopes are equal only for equal scopes
// and regions (the first NUL ends the scope). Scopes are limited to
// dynamostore.MaxScopeBytes minus room for the suffix.
//
// Before claiming, a failover claim reads, in the failover region, the
// key's home record as replicated there and the other regions' failover
// records as replicated there: a completed one is replayed, one in flight
// answers 409, one for another request answers 422. Only when none is found
// does the request execute, and its staged effects commit with the failover
// record in that region.
//
// When the home region is back, two things keep a failover execution from
// being repeated there and bring its evidence home:
//
//   - With Failover on, a claim acquired in the home region first reads the
//     key's failover record in each other region, in the region that wrote
//     it (the only writer, so a consistent read there is authoritative).
//     A completed one is promoted: the home claim commits its response,
//     marked with its execution (PromotedHeader), and the request is
//     answered as a replay. An abandoned one (in progress, its lock
//     expired: its owner may only be stalled) is retired in the region that
//     wrote it before the home executes: a claim there takes the expired
//     lock, so the stalled owner's commit, fenced by its lock token, can no
//     longer land (mode home-failover-zombie). When the writing region
//     cannot be read, the copy replicated into the home region decides
//     (mode home-failover-replica); when that copy is abandoned (it cannot
//     be retired) or cannot be read either, the request fails closed. When
//     the home replica holds none, the request goes ahead: a failover
//     execution that had not replicated is one within the replication lag
//     before its region became unreachable, the stated risk, and Reconcile
//     reports it. This costs one cross-region consistent GetItem per other
//     region for each first execution in failover mode (the regions are
//     read in parallel), and nothing for replays. The same fence runs
//     during a topology change, while failover itself is suspended, over
//     every region of both topologies: a failover record written before
//     the change may lie in a region the active topology does not list,
//     or in the active home itself when the consulted topology homes the
//     key elsewhere; a region the process has no client for is read in
//     the home's replica.
//   - Reconcile lists the failover records (one filtered Scan per region),
//     promotes each into an absent home record with a claim whose condition
//     holds only while the key is absent, expired or abandoned, and reports
//     every key whose home record was written by a different execution.
//
// Only a Store with Failover on runs that fence: a Store with Failover
// off claims the home record alone, so a key that a failover region
// executed (and that neither a fenced home claim nor Reconcile has promoted
// home yet) executes again there. Failover must therefore stay on in every
// process of the fleet until the table holds no live failover record: a
// Reconcile, run after the last failover decision (EventFailover) of any
// process, that reports FailoverRecords == 0 with nothing Pending or
// Unreachable. A failover record stays until Retention after the later
// of its lock's end and its completion (dynamostore.Options.Lease and
// Retention), so that is never sooner than Lease + Retention after the
// last failover.
// Turning Failover off earlier, or running Failover-off processes beside
// Failover-on ones, re-opens the duplicates the fence closes.
//
// Detection does not depend on timing: a failover execution and a home
// execution of one key leave two records under two partition keys that
// replication never merges, so whatever order things happen in, Reconcile
// finds both until they expire. Run it once the home region is healthy
// again, before alerting that the incident is over.
//
// Records do not carry their origin in a dedicated attribute: dynamostore
// owns the record format, and until it can write a record as given, a
// promotion is a claim plus a commit whose stored response carries
// PromotedHeader. The Store strips the header from every record and
// response it returns.
//
// Changing Pins or the region list re-homes keys. A key re-homed while its
// old home's record has not replicated can execute again; change them when
// replication has caught up.
//
// # Eviction: why HomeRegion mode refuses TTL
//
// On an MREC table "DynamoDB replicates TTL deletes to all replica tables"
// (developer guide, "Time to Live (TTL)",
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/TTL.html),
// and concurrent changes of an item are resolved by "the latest internal
// timestamp on a per-item basis", last writer wins; a conditional write
// "evaluates the condition expression against the version of the item in
// the Region" ("Global tables core concepts",
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/globaltables-CoreConcepts.html).
// So when the home region writes a key anew (a claim reusing it after its
// retention, or reclaiming an abandoned claim) while another replica, which
// has not seen that write yet, TTL-deletes its old expired version, the
// deletion can be the later change: it replicates, wins, and erases the
// newer record; had it completed, the next retry executes again
// (internal/regionsim, mode home-ttl-replicated). A sweeper deleting in a
// region that did not write the record has the same race. HomeRegion mode
// therefore refuses Eviction = EvictByTTL (ErrTTLReplicated): turn TTL off
// (dynamostore.EnsureTableWithoutTTL checks it; idemctl create-table
// -no-ttl), and in each region run a sweeper over that region's replica
// with dynamostore.SweepOptions.Region set to the region's name and
// SweepOptions.Owns to the Store's SweepOwner for it. Every record is then
// deleted only in the one region that now writes it (the key's home under
// the topology record, or for a failover record its failover region, and
// the key's home once that region is removed), where the delete is
// ordered with that region's writes of the item; a key re-homed by a
// change is deleted by its new home, never from its old home's replica. New cannot read the
// table's TTL setting itself (it does no I/O); the declaration is required
// instead and EnsureTableWithoutTTL verifies it at start.
//
// # What MRSC tables do not support
//
// An MRSC global table spans exactly three regions: three replicas, or two
// replicas and a witness, which holds replicated change data for the
// quorum but serves no reads or writes ("Multi-Region strong consistency",
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/multi-region-strong-consistency-gt.html;
// UpdateTable, GlobalTableWitnessUpdates: "You cannot perform read or write
// operations on a witness",
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTable.html).
// For Strong mode: list only the replica regions in New, never a witness.
// With three replicas, a claim falls back to either of the two others; with
// two replicas and a witness, it has one region to fall back to, and while
// a replica region is down the other keeps serving only as long as it and
// the witness form the majority.
//
// From the same "Multi-Region strong consistency" page, among its
// limitations:
//
//   - MRSC tables do not support transaction operations (TransactWriteItems
//     returns an error on an MRSC replica). So the key record and staged
//     effects cannot commit together: New refuses Strong with
//     Effects = EffectsStaged (ErrTransactionsUnsupported), and a Strong
//     commit with staged effects fails before writing. The alternative:
//     write each effect after the claim, keyed by the idempotency key, with
//     its own attribute_not_exists condition, so that a second execution's
//     write fails harmlessly; declare EffectsKeyed.
//   - MRSC tables do not support TTL. New refuses Strong with
//     Eviction = EvictByTTL (ErrTTLUnsupported): expired key records are
//     absent for every read and condition of dynamostore, but only a
//     sweeper deletes them; declare EvictBySweeper, and create or check the
//     table with dynamostore.EnsureTableWithoutTTL (idemctl create-table
//     -no-ttl), which never enables TTL.
//
// On MREC tables, transactions are atomic only in the region where they
// were invoked and their items replicate individually ("Global tables core
// concepts", above): other regions may briefly see the key record without
// its effects. The home region, where everything about the key is read,
// never does. From the API reference, ReplicatedWriteConflictException
// (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html#API_PutItem_Errors):
// "The request was rejected because one or more items in the request are
// being modified by a request in another Region"; aws-sdk-go-v2 v1.74.0
// models it as types.ReplicatedWriteConflictException, which Strong mode
// matches (and its error code, for wrapped copies).
//
// In HomeRegion mode New refuses EffectsKeyed: on an MREC table a keyed
// effect's attribute_not_exists is checked only in the region that writes
// it, so it stops no second execution elsewhere.
//
// Strong mode checks that the table is MRSC before its first call: one
// DescribeTable, whose MultiRegionConsistency must be STRONG (see Claim);
// any other table is refused with ErrNotStrongTable.
//
// # Clocks: the skew the protocol assumes
//
// Every time a decision compares (a claim's lock expiry, a record's
// expiry, a sweeper's "stuck" and "expired", the fence's "abandoned") is
// written with the clock of the process that wrote the record and read
// with the clock of the process that decides, in whatever region. The
// guarantee assumes that the clocks of all processes and sweepers on the
// table, in every region, agree within MaxClockSkew (1 second; Amazon Time
// Sync keeps EC2 and Lambda clocks within milliseconds), and that every
// request finishes (claim to commit) within dynamostore's Lease minus
// MaxClockSkew. Within that bound nothing executes twice for a skew: a
// claim is taken over only after its owner's lease, and a completed record
// replays for Retention minus MaxClockSkew at least. Beyond it, a process
// whose clock runs ahead of the claim's writer by more than the time left
// of the lease takes the key over while its owner still runs: the handler
// runs a second time, concurrently; the first commit, fenced by its lock
// token, then fails, so staged effects still commit once, but anything the
// handler did outside the transaction happens twice. A retry near the end
// of Retention reaching a process (or a sweeper deleting) ahead by more
// than the time left sees the record expired and executes again, effects
// included. In HomeRegion and Strong modes New refuses a region's store
// whose Lease is shorter than MinLease (twice MaxClockSkew), which leaves
// no request time under the bound. The simulation shows both sides
// (modes home-skewed-clocks and home-skewed-clocks-beyond).
//
// README.md in this directory has the decision table.
//
// The public surface: Store (New) over Regions (NewRegion) with its
// Options, the topology record (LoadTopology, AdvanceTopology), HomeOrder,
// the Events and Counters it reports, and the errors.
package multiregion
