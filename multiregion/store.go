package multiregion

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/keyschema"
	"github.com/idemkey/idemkey/txn"
)

// Mode is the consistency model of a Store, chosen at construction.
type Mode int

const (
	// SingleRegion: one region, today's behaviour of a *dynamostore.Store.
	// The default.
	SingleRegion Mode = iota
	// HomeRegion: for multi-Region eventually consistent (MREC, the
	// default) global tables. Every (scope, key) has one home region; every
	// claim, commit and read of the key goes there, from whichever region
	// the request arrives in. Fails closed when the home region cannot be
	// reached, unless Options.Failover.
	HomeRegion
	// Strong: for multi-Region strongly consistent (MRSC) global tables.
	// Conditional writes are linearizable across regions, so any region
	// serves any key: Options.Local first, the others if it is unreachable.
	// Effects cannot be staged in transactions and records are not evicted
	// by TTL (see New).
	Strong
)

func (m Mode) String() string {
	switch m {
	case SingleRegion:
		return "single-region"
	case HomeRegion:
		return "home-region"
	case Strong:
		return "strong"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// EffectWrites declares how the guarded service writes its DynamoDB
// effects, so that New can refuse a mode that cannot keep them exactly
// once.
type EffectWrites int

const (
	// EffectsStaged: effects are staged on the txn.Tx of the request and
	// committed with the key record in one TransactWriteItems (the default,
	// and the only safe choice in HomeRegion mode).
	EffectsStaged EffectWrites = iota
	// EffectsKeyed: the handler writes each effect itself, after the key is
	// claimed, keyed by the idempotency key (scope and key) and with its own
	// attribute_not_exists condition, so that a second execution's write
	// fails harmlessly. The alternative to transactions on MRSC tables.
	EffectsKeyed
	// EffectsNone: the service writes no DynamoDB effects.
	EffectsNone
)

// Eviction declares how expired key records leave the table.
type Eviction int

const (
	// EvictByTTL: DynamoDB TTL on dynamostore.TTLAttribute deletes them
	// (the default; dynamostore.EnsureTable enables it). SingleRegion only:
	// Strong and HomeRegion modes refuse it (see New).
	EvictByTTL Eviction = iota
	// EvictBySweeper: TTL is off on the table (dynamostore.EnsureTableWithoutTTL
	// creates or checks it so) and the service runs a sweeper; in HomeRegion
	// mode one per region, each over its replica with
	// dynamostore.SweepOptions.Region set to that region. Expired records
	// are absent for every read and condition either way.
	EvictBySweeper
)

// RetryOptions bound the retries of ReplicatedWriteConflictException in
// Strong mode. The zero value of each field selects its default.
type RetryOptions struct {
	// MaxAttempts bounds the attempts of one call (default 4).
	MaxAttempts int
	// BaseDelay is the backoff before the second attempt (default 20ms);
	// it doubles per attempt up to MaxDelay (default 400ms), with full
	// jitter.
	BaseDelay, MaxDelay time.Duration
}

// MaxClockSkew is the clock skew the protocol assumes between any two
// processes (and sweepers) that use the table, in any region: see the
// package documentation (Clocks).
const MaxClockSkew = time.Second

// MinLease is the shortest dynamostore Lease New accepts in HomeRegion and
// Strong modes: twice MaxClockSkew, so that a request has at least
// MaxClockSkew to finish in before a process whose clock runs ahead by the
// skew may take its key over.
const MinLease = 2 * MaxClockSkew

// Options configure a Store. The zero value selects SingleRegion.
type Options struct {
	// Mode is the consistency model (default SingleRegion).
	Mode Mode
	// Local is the region this process runs in, served first in Strong
	// mode (default: the first region). HomeRegion mode writes the first
	// topology record there; a key's home does not depend on it.
	Local string
	// Pins maps a scope to the home region of all its keys (HomeRegion
	// only), e.g. a tenant whose data must stay in one region. Scopes not
	// in Pins are homed by HomeOrder. The other regions follow in HomeOrder
	// as the failover order. New copies the map: changing it afterwards
	// changes nothing (pins change through a new Store and the topology
	// record, see AdvanceTopology).
	Pins map[string]string
	// Failover (HomeRegion only) lets a claim whose home region cannot be
	// reached go to the next reachable region of the key's order, and runs
	// the fence (see Fence). A key that a region executed within the
	// replication lag before that region became unreachable can then execute
	// again where its retry goes; Reconcile reports every such key. Off (the
	// default), such a request is refused as unavailable. Once any process
	// has run with Failover, keep it (or Fence) on in every process until a
	// Reconcile run after the last EventFailover reports FailoverRecords == 0
	// with nothing Pending or Unreachable (never sooner than dynamostore's
	// Lease + Retention after that failover): a Store without the fence
	// executes again at home a key a failover region executed.
	Failover bool
	// Fence (HomeRegion only) runs the failover fence without failing over:
	// every first execution in the home reads the key's failover records
	// first and Get looks for them, but an unreachable home fails closed.
	// It is the rolling-deploy step between Failover off and on, either
	// way: deploy Fence everywhere before Failover, and keep it after
	// Failover until the Reconcile above. Failover implies it.
	Fence bool
	// Effects declares how the service writes its effects (default
	// EffectsStaged). Strong mode refuses EffectsStaged; HomeRegion mode
	// refuses EffectsKeyed.
	Effects EffectWrites
	// Eviction declares how expired records are deleted (default
	// EvictByTTL). Strong and HomeRegion modes refuse EvictByTTL.
	Eviction Eviction
	// ConflictRetry bounds the retries of ReplicatedWriteConflictException
	// (Strong mode).
	ConflictRetry RetryOptions
	// TopologyRefresh (HomeRegion only) is how long the Store routes by the
	// topology record it last read (default DefaultTopologyRefresh; each
	// read is one consistent GetItem per region). Wait at least this long,
	// plus the replication lag and the longest request, between two steps
	// of a topology change.
	TopologyRefresh time.Duration
	// TopologyReadTimeout (HomeRegion only) bounds each region's read of
	// the topology record, made in parallel (default
	// DefaultTopologyReadTimeout); a region whose read times out counts as
	// unreachable.
	TopologyReadTimeout time.Duration
	// Observer receives every routing decision (failover, fail closed,
	// fence results, conflict retries); nil: none. It is called
	// synchronously on the request's goroutine, possibly concurrently: it
	// must be quick and safe for concurrent use. Counters.Observe is one;
	// ObserverFor(obs) passes the decisions to an idemkey Observer.
	Observer func(Event)
}

// Scanner is the DynamoDB call Reconcile makes to find failover records.
// *dynamodb.Client satisfies it.
type Scanner interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ Scanner = (*dynamodb.Client)(nil)

// Region is one region's replica of the key table.
type Region struct {
	// Name is the region's name, e.g. "eu-west-1". It is part of the
	// home hash and of failover records: keep it stable.
	Name string
	// Store reads and writes the region's replica, through a DynamoDB
	// client for that region. In HomeRegion and Strong modes its
	// Options().Region must equal Name (records carry the region that wrote
	// them, and commits are routed back there), and so must the AWS region
	// of its client, Client and Scanner (see New).
	Store *dynamostore.Store
	// Scanner lists the region's failover records for Reconcile: the same
	// region's DynamoDB client. Optional; Reconcile fails without it.
	Scanner Scanner
	// Client reads and writes the table's topology record in the region:
	// the same region's DynamoDB client. Required in HomeRegion mode
	// (NewRegion sets it).
	Client TopologyClient
}

// RegionClient is what NewRegion needs: the calls of a dynamostore.Store
// and Scan. *dynamodb.Client satisfies it.
type RegionClient interface {
	dynamostore.Client
	Scanner
}

// NewRegion returns the Region name over table, read and written through
// client (a DynamoDB client for that region; in HomeRegion and Strong
// modes New refuses one configured for another): a dynamostore.Store with
// Options.Region set to name, after optFns, and client as its Scanner and
// Client.
func NewRegion(name string, client RegionClient, table string, optFns ...func(*dynamostore.Options)) Region {
	fns := append(append([]func(*dynamostore.Options){}, optFns...), func(o *dynamostore.Options) { o.Region = name })
	return Region{Name: name, Store: dynamostore.New(client, table, fns...), Scanner: client, Client: client}
}

// Store routes the key store's calls over several regional replicas of one
// key table according to its Mode. It implements idemkey.Store, so
// idemkey.New, handler.New and the lambda front doors take it in place of
// a *dynamostore.Store. It is safe for concurrent use.
type Store struct {
	opts    Options
	regions []*region // in configuration order
	byName  map[string]*region
	names   []string
	local   *region
	// scopeRoom is the longest scope a claim may have in HomeRegion mode
	// with failover: room is left for the failover suffix.
	scopeRoom int
	topo      topologyCache
	mrsc      tableCheck
}

type region struct {
	name    string
	store   *dynamostore.Store
	scanner Scanner
	client  TopologyClient
}

var _ idemkey.Store = (*Store)(nil)

// New returns a Store over regions. It makes no call, and refuses with a
// *ConfigError (matching ErrInvalidConfig unless named) a configuration it
// cannot serve or that would lose the exactly-once guarantee:
//
//   - no region; a region without a name, with a NUL byte in it, or
//     without a store; two regions of one name; regions over different
//     tables or key schemas;
//   - in HomeRegion and Strong modes: a region whose store writes another
//     region name, or with a client (its store's, Client or Scanner)
//     configured for another AWS region or that does not report one (has
//     no Options() dynamodb.Options method); a store whose Lease is shorter
//     than MinLease;
//   - SingleRegion with more than one region; Local naming an unknown
//     region; Pins, Failover or Fence outside HomeRegion; a pin to an
//     unknown region;
//   - HomeRegion without a region Client; with Effects = EffectsKeyed (on
//     MREC a keyed effect's condition stops no execution elsewhere); with
//     Eviction = EvictByTTL (ErrTTLReplicated; see the package doc);
//   - Strong with more than three regions; with a store's client lacking
//     DescribeTable; with Effects = EffectsStaged
//     (ErrTransactionsUnsupported: MRSC tables reject transactions); with
//     Eviction = EvictByTTL (ErrTTLUnsupported: MRSC tables have no TTL).
//   - in HomeRegion and Strong modes, a store with a BodyStore
//     (dynamostore.Options.Bodies): its objects do not replicate with the
//     table, so another region could not replay a large response.
func New(regions []Region, optFns ...func(*Options)) (*Store, error) {
	s := &Store{byName: map[string]*region{}}
	for _, fn := range optFns {
		fn(&s.opts)
	}
	o := &s.opts
	// A caller changing the map after New must not re-home keys.
	o.Pins = maps.Clone(o.Pins)
	bad := func(field, reason string) error {
		return &ConfigError{Mode: o.Mode, Field: field, Reason: reason, Err: ErrInvalidConfig}
	}
	if o.Mode < SingleRegion || o.Mode > Strong {
		return nil, bad("Mode", "unknown mode")
	}
	if len(regions) == 0 {
		return nil, bad("regions", "at least one region is needed")
	}
	longest := 0
	for i, r := range regions {
		field := "regions[" + strconv.Itoa(i) + "]"
		switch {
		case r.Name == "" || strings.IndexByte(r.Name, 0) >= 0:
			return nil, bad(field, "a region needs a name without NUL bytes")
		case r.Store == nil:
			return nil, bad(field, "region "+strconv.Quote(r.Name)+" has no store")
		case s.byName[r.Name] != nil:
			return nil, bad(field, "region "+strconv.Quote(r.Name)+" is listed twice")
		case o.Mode != SingleRegion && r.Store.Options().Region != r.Name:
			return nil, bad(field, "the store of region "+strconv.Quote(r.Name)+" writes region "+
				strconv.Quote(r.Store.Options().Region)+"; set dynamostore.Options.Region to the region's name (NewRegion does)")
		case o.Mode != SingleRegion && r.Store.Options().Bodies != nil:
			return nil, bad(field, "the store of region "+strconv.Quote(r.Name)+" keeps large bodies in a BodyStore (dynamostore.Options.Bodies), "+
				"whose objects global tables do not replicate: a replay in another region would find no body; leave Bodies unset in HomeRegion and Strong modes")
		case o.Mode != SingleRegion && clientRegionMismatch(r) != "":
			return nil, bad(field, clientRegionMismatch(r))
		case o.Mode != SingleRegion && r.Store.Options().Lease < MinLease:
			return nil, bad(field, "the store of region "+strconv.Quote(r.Name)+" has a Lease of "+r.Store.Options().Lease.String()+
				", shorter than MinLease ("+MinLease.String()+"): with clocks MaxClockSkew ("+MaxClockSkew.String()+") apart, a process whose clock runs ahead "+
				"could take a claim over while its request still runs; set dynamostore.Options.Lease to at least the longest request plus MaxClockSkew")
		case o.Mode == Strong && !describes(r.Store):
			return nil, bad(field, "the store's client of region "+strconv.Quote(r.Name)+" has no DescribeTable, with which Strong mode checks that the table is MRSC; pass the region's *dynamodb.Client")
		case o.Mode == HomeRegion && r.Client == nil:
			return nil, bad(field, "region "+strconv.Quote(r.Name)+" has no Client: HomeRegion mode reads the table's topology record through it (NewRegion sets it)")
		case i > 0 && r.Store.Table() != regions[0].Store.Table():
			return nil, bad(field, "the store of region "+strconv.Quote(r.Name)+" is over table "+strconv.Quote(r.Store.Table())+
				", region "+strconv.Quote(regions[0].Name)+"'s over "+strconv.Quote(regions[0].Store.Table())+
				": the replicas of one global table share its name, and a region that reads another table finds none of the others' records")
		case i > 0 && keyschema.Schema(r.Store.Options().Schema).WithDefaults() != keyschema.Schema(regions[0].Store.Options().Schema).WithDefaults():
			return nil, bad(field, "the store of region "+strconv.Quote(r.Name)+" has another key schema than region "+
				strconv.Quote(regions[0].Name)+"'s: each would read the other's records as none")
		}
		reg := &region{name: r.Name, store: r.Store, scanner: r.Scanner, client: r.Client}
		s.regions = append(s.regions, reg)
		s.byName[r.Name] = reg
		s.names = append(s.names, r.Name)
		longest = max(longest, len(r.Name))
	}
	s.local = s.regions[0]
	if o.Local != "" {
		if s.byName[o.Local] == nil {
			return nil, bad("Local", "unknown region "+strconv.Quote(o.Local))
		}
		s.local = s.byName[o.Local]
	}
	if o.Mode != HomeRegion {
		if len(o.Pins) > 0 {
			return nil, bad("Pins", "pins apply to HomeRegion mode only")
		}
		if o.Failover || o.Fence {
			return nil, bad("Failover", "failover and its fence apply to HomeRegion mode only (Strong mode always serves from any reachable region)")
		}
	}
	switch o.Mode {
	case SingleRegion:
		if len(regions) != 1 {
			return nil, bad("regions", "SingleRegion mode takes exactly one region; choose HomeRegion or Strong for several")
		}
	case HomeRegion:
		for scope, pin := range o.Pins {
			if s.byName[pin] == nil {
				return nil, bad("Pins", "scope "+strconv.Quote(scope)+" is pinned to unknown region "+strconv.Quote(pin))
			}
		}
		if o.Effects == EffectsKeyed {
			return nil, bad("Effects", "on an MREC table a keyed effect's attribute_not_exists is checked only in the region that writes it, "+
				"so it does not stop a second execution in another region; stage effects (EffectsStaged), which commit in the key's home region with the key")
		}
		if err := homeEvictionError(o); err != nil {
			return nil, err
		}
	case Strong:
		if len(regions) > 3 {
			return nil, bad("regions", "an MRSC table spans exactly three regions (two replicas and a witness, or three replicas): "+
				strconv.Itoa(len(regions))+" regions cannot all be its replicas")
		}
		if o.Effects == EffectsStaged {
			return nil, &ConfigError{Mode: o.Mode, Field: "Effects", Err: ErrTransactionsUnsupported,
				Reason: "MRSC tables reject TransactWriteItems, so staged effects cannot commit with the key; " +
					"write each effect after the claim, keyed by the idempotency key with attribute_not_exists, and set Effects to EffectsKeyed (or EffectsNone)"}
		}
		if o.Eviction == EvictByTTL {
			return nil, &ConfigError{Mode: o.Mode, Field: "Eviction", Err: ErrTTLUnsupported,
				Reason: "MRSC tables do not support TTL, so expired records would never be deleted; run a sweeper and set Eviction to EvictBySweeper"}
		}
	}
	r := o.ConflictRetry
	if r.MaxAttempts <= 0 {
		s.opts.ConflictRetry.MaxAttempts = 4
	}
	if r.BaseDelay <= 0 {
		s.opts.ConflictRetry.BaseDelay = 20 * time.Millisecond
	}
	if r.MaxDelay <= 0 {
		s.opts.ConflictRetry.MaxDelay = 400 * time.Millisecond
	}
	if o.TopologyRefresh <= 0 {
		o.TopologyRefresh = DefaultTopologyRefresh
	}
	if o.TopologyReadTimeout <= 0 {
		o.TopologyReadTimeout = DefaultTopologyReadTimeout
	}
	s.scopeRoom = dynamostore.MaxScopeBytes - len(failoverMarker) - longest
	return s, nil
}

// describes reports whether st's client can describe the table.
func describes(st *dynamostore.Store) bool {
	_, ok := st.Client().(describer)
	return ok
}

// regionReporter is a DynamoDB client that says which AWS region it is
// configured for, as *dynamodb.Client does.
type regionReporter interface{ Options() dynamodb.Options }

// clientRegionMismatch returns why a client of r is not a client of the
// region r names, or "" when every one is: each must report its AWS region
// and it must be r.Name.
func clientRegionMismatch(r Region) string {
	clients := []struct {
		role   string
		client any
	}{{"store's client", r.Store.Client()}, {"Client", r.Client}, {"Scanner", r.Scanner}}
	for _, c := range clients {
		if c.client == nil {
			continue
		}
		rr, ok := c.client.(regionReporter)
		if !ok {
			return fmt.Sprintf("the %s of region %q (a %T) does not report its AWS region, so New cannot check that it is that region's: "+
				"pass the region's *dynamodb.Client (put fault injection and counting in its middleware), or give the wrapper the method "+
				"Options() dynamodb.Options returning the wrapped client's options", c.role, r.Name, c.client)
		}
		if got := rr.Options().Region; got != r.Name {
			return fmt.Sprintf("the %s of region %q is configured for AWS region %q: give each region its own client "+
				"(dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.Region = %q }))", c.role, r.Name, got, r.Name)
		}
	}
	return ""
}

// fenced reports whether the Store runs the failover fence (Failover or
// Fence).
func (s *Store) fenced() bool { return s.opts.Failover || s.opts.Fence }

// Mode returns the store's mode.
func (s *Store) Mode() Mode { return s.opts.Mode }

// Regions returns the region names in configuration order.
func (s *Store) Regions() []string { return append([]string(nil), s.names...) }

// Order returns the regions of (scope, key) in preference order: its home
// first (the pinned region of its scope, if any, else HomeOrder's first),
// then its failover order. In SingleRegion and Strong modes it returns
// Options.Local first and the others in configuration order.
func (s *Store) Order(scope, key string) []string {
	rs := s.order(scope, key)
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.name
	}
	return out
}

// Home returns the home region of (scope, key): Order(scope, key)[0].
func (s *Store) Home(scope, key string) string { return s.order(scope, key)[0].name }

func (s *Store) order(scope, key string) []*region {
	var names []string
	if s.opts.Mode == HomeRegion {
		if pin, ok := s.opts.Pins[scope]; ok {
			names = pinnedOrder(scope, key, pin, s.names)
		} else {
			names = HomeOrder(scope, key, s.names)
		}
	} else {
		names = append([]string{s.local.name}, s.names...)
	}
	out := make([]*region, 0, len(s.regions))
	for _, n := range names {
		if r := s.byName[n]; r != nil && (len(out) == 0 || r != out[0]) {
			out = append(out, r)
		}
	}
	return out
}

// Claim claims req's key in the region the mode chooses, with the results
// of dynamostore.Store.Claim; the claim's Record.Region names the region
// that holds it, and Commit and Release go back there.
//
// HomeRegion mode claims in the key's home. It routes by the table's
// topology record (see CheckTopology, run when the record held is older
// than Options.TopologyRefresh): a configuration the record contradicts
// gets a *ConfigError matching ErrTopologyMismatch and nothing is claimed.
// While the record changes, the claim goes to the home under the active
// topology, with a consistent read of the home under the consulted one
// before and after it (a live record there answers the request); failover
// is suspended but the fence runs over the regions of both topologies, and
// a key homed in a region the Store has no client for gets a *RegionError
// wrapping ErrRegionNotConfigured. An unreachable home fails with a
// *RegionError wrapping the *dynamostore.StoreError (the Guard answers
// 503), or with Failover claims in the next reachable region of the key's
// order. With Failover, a scope that holds a NUL byte or is longer than
// dynamostore.MaxScopeBytes minus room for the failover suffix is refused
// with dynamostore.ErrInvalidRequest.
//
// Strong mode claims in Options.Local, or the next region when that one
// cannot be reached, retrying ReplicatedWriteConflictException with
// backoff. The first call of a Strong-mode Store (Claim, Commit, Release or
// Get) checks with one DescribeTable (IAM action dynamodb:DescribeTable)
// that the table is MRSC; otherwise that call and every later one fail
// with a *ConfigError matching ErrNotStrongTable, and nothing is read or
// written.
func (s *Store) Claim(ctx context.Context, req idemkey.Request) (*dynamostore.Claim, error) {
	switch s.opts.Mode {
	case HomeRegion:
		rec, err := s.topology(ctx)
		if err != nil {
			var re *RegionError
			if errors.As(err, &re) {
				s.observe(Event{Kind: EventFailClosed, Scope: req.Scope, Key: req.Key, Region: re.Regions[len(re.Regions)-1], Err: re.Err})
			}
			return nil, err
		}
		if rec.Changing() {
			return s.changeClaim(ctx, req, rec)
		}
		return s.homeClaim(ctx, req)
	case Strong:
		if err := s.strongTable(ctx); err != nil {
			return nil, err
		}
		return strongCall(ctx, s, s.order(req.Scope, req.Key), req.Scope, req.Key, func(r *region) (*dynamostore.Claim, error) {
			return r.store.Claim(ctx, req)
		})
	}
	return s.local.store.Claim(ctx, req)
}

// Commit completes the claim in the region that holds it, with the
// semantics of dynamostore.Store.Commit. In Strong mode a commit with
// staged effects fails with ErrTransactionsUnsupported before anything is
// written (the Guard then releases the key).
func (s *Store) Commit(ctx context.Context, c *dynamostore.Claim, resp idemkey.Response, tx *txn.Tx) (*dynamostore.Record, error) {
	switch s.opts.Mode {
	case HomeRegion:
		r, inRegion, err := s.heldIn(c)
		if err != nil {
			return nil, err
		}
		resp.Header = withoutMarker(resp.Header)
		rec, err := r.store.Commit(ctx, inRegion, resp, tx)
		return userView(rec), err
	case Strong:
		if n := tx.Len(); n > 0 {
			return nil, fmt.Errorf("%w: the commit carries %d staged effects; write effects keyed by the idempotency key instead", ErrTransactionsUnsupported, n)
		}
		if err := s.strongTable(ctx); err != nil {
			return nil, err
		}
		rs, err := s.strongClaimOrder(c)
		if err != nil {
			return nil, err
		}
		return strongCall(ctx, s, rs, c.Record.Scope, c.Record.Key, func(r *region) (*dynamostore.Record, error) {
			return r.store.Commit(ctx, c, resp, nil)
		})
	}
	return s.local.store.Commit(ctx, c, resp, tx)
}

// Release frees the claim in the region that holds it, with the semantics
// of dynamostore.Store.Release.
func (s *Store) Release(ctx context.Context, c *dynamostore.Claim) error {
	switch s.opts.Mode {
	case HomeRegion:
		r, inRegion, err := s.heldIn(c)
		if err != nil {
			return err
		}
		return r.store.Release(ctx, inRegion)
	case Strong:
		if err := s.strongTable(ctx); err != nil {
			return err
		}
		rs, err := s.strongClaimOrder(c)
		if err != nil {
			return err
		}
		_, err = strongCall(ctx, s, rs, c.Record.Scope, c.Record.Key, func(r *region) (struct{}, error) {
			return struct{}{}, r.store.Release(ctx, c)
		})
		return err
	}
	return s.local.store.Release(ctx, c)
}

// Get returns the live record of (scope, key) as the mode sees it, or
// dynamostore.ErrNotFound. HomeRegion mode checks the topology record as
// Claim does, and reads the key's home (while the record changes, the home
// under the active topology, then under the consulted one). With Failover,
// when the home has no record, a live failover record of the key (read in
// the region that wrote it) is returned; when the home cannot be reached,
// the first live record in the other regions of the key's order.
func (s *Store) Get(ctx context.Context, scope, key string) (*dynamostore.Record, error) {
	switch s.opts.Mode {
	case HomeRegion:
		rec, err := s.topology(ctx)
		if err != nil {
			return nil, err
		}
		if rec.Changing() {
			return s.changeGet(ctx, scope, key, rec)
		}
		return s.homeGet(ctx, scope, key)
	case Strong:
		if err := s.strongTable(ctx); err != nil {
			return nil, err
		}
		return strongCall(ctx, s, s.order(scope, key), scope, key, func(r *region) (*dynamostore.Record, error) {
			return r.store.Get(ctx, scope, key)
		})
	}
	return s.local.store.Get(ctx, scope, key)
}

func (s *Store) observe(e Event) {
	if s.opts.Observer != nil {
		s.opts.Observer(e)
	}
}

// unavailable reports whether another region may be tried after err: a
// transport failure, 5xx or throttling of a *dynamostore.StoreError while
// ctx lives. A condition failure or validation error would hide a fault.
func unavailable(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	var se *dynamostore.StoreError
	if !errors.As(err, &se) {
		return false
	}
	var api smithy.APIError
	if !errors.As(err, &api) {
		return true
	}
	if api.ErrorFault() == smithy.FaultServer {
		return true
	}
	// An answer of 5xx whose code the SDK does not model (InternalFailure)
	// has no fault set: its status says it is the server's.
	var resp interface{ HTTPStatusCode() int }
	if errors.As(err, &resp) && resp.HTTPStatusCode() >= 500 {
		return true
	}
	switch api.ErrorCode() {
	case "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
		"InternalServerError", "ServiceUnavailable", "LimitExceededException":
		return true
	}
	return false
}
