package multiregion

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/keyschema"
)

// TopologyPartitionKey is the partition key (dynamostore.PartitionKey) of
// the table's topology record on the default dynamostore.KeySchema; on a
// schema with a Prefix it is Prefix + "#" + TopologyPartitionKey, and on
// one with a sort key the record's sort key is the schema's SortKeyValue.
// Every key record's partition key begins with a decimal digit (the byte
// length of its scope), after Prefix + "#" when there is one, so this
// one, which begins with '#' there, is never a key record's; the record has no expiry
// attribute, so neither TTL nor the sweeper deletes it, and it replicates
// like any item.
const TopologyPartitionKey = "#idemkey/multiregion/topology"

// DefaultTopologyRefresh is how long a Store uses the topology record it
// read before reading it again (Options.TopologyRefresh).
const DefaultTopologyRefresh = 10 * time.Second

// DefaultTopologyReadTimeout is the default of Options.TopologyReadTimeout.
const DefaultTopologyReadTimeout = 2 * time.Second

// Attributes of the topology record.
const (
	attrTopoVersion   = "topo_v"
	attrTopoRegions   = "regions"
	attrTopoPins      = "pins"
	attrTopoConsulted = "consulted_regions"
	attrTopoConsPins  = "consulted_pins"
)

var (
	// ErrTopologyMismatch reports a Store whose region names or pins are
	// neither the table's topology record's active topology nor, during a
	// change, its consulted one. The Store refuses every key until its
	// configuration or the record changes.
	ErrTopologyMismatch = errors.New("multiregion: configuration contradicts the table's topology record")

	// ErrNoTopology reports that the table holds no topology record
	// (LoadTopology).
	ErrNoTopology = errors.New("multiregion: no topology record")

	// ErrTopologyStep reports a change AdvanceTopology refuses: a target
	// that is neither side of the change in progress, or a record that
	// another writer changed since it was read.
	ErrTopologyStep = errors.New("multiregion: topology step refused")

	// ErrRegionNotConfigured reports a key whose home under the table's
	// topology record is a region this Store has no client for (a process
	// deployed before the region was added). Claim and Get answer it
	// inside a *RegionError, as unavailable: another process can serve
	// the key.
	ErrRegionNotConfigured = errors.New("multiregion: region not configured in this process")
)

// Topology is what homes keys in HomeRegion mode: the region names and the
// pinned scopes. Two topologies are equal when they name the same set of
// regions (in any order) and the same pins.
type Topology struct {
	Regions []string
	Pins    map[string]string
}

// Equal reports whether t and u name the same regions and pins.
func (t Topology) Equal(u Topology) bool {
	a, b := slices.Clone(t.Regions), slices.Clone(u.Regions)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b) && maps.Equal(t.Pins, u.Pins)
}

// Order returns the regions of (scope, key) under t, home first: the
// pinned region of scope, if any, then HomeOrder's order.
func (t Topology) Order(scope, key string) []string {
	if pin, ok := t.Pins[scope]; ok {
		return pinnedOrder(scope, key, pin, t.Regions)
	}
	return HomeOrder(scope, key, t.Regions)
}

// Home returns the home region of (scope, key) under t, "" for a
// topology without regions.
func (t Topology) Home(scope, key string) string {
	if order := t.Order(scope, key); len(order) > 0 {
		return order[0]
	}
	return ""
}

func (t Topology) validate() error {
	if len(t.Regions) == 0 {
		return fmt.Errorf("%w: a topology needs a region", ErrTopologyStep)
	}
	seen := map[string]bool{}
	for _, r := range t.Regions {
		if r == "" || strings.IndexByte(r, 0) >= 0 || seen[r] {
			return fmt.Errorf("%w: region names must be distinct, not empty and without NUL bytes: %q", ErrTopologyStep, t.Regions)
		}
		seen[r] = true
	}
	for scope, pin := range t.Pins {
		if !seen[pin] {
			return fmt.Errorf("%w: scope %q is pinned to %q, not a region of the topology", ErrTopologyStep, scope, pin)
		}
	}
	return nil
}

func (t Topology) String() string {
	rs := slices.Clone(t.Regions)
	slices.Sort(rs)
	s := "[" + strings.Join(rs, " ") + "]"
	if len(t.Pins) > 0 {
		s += fmt.Sprintf(" pins %v", t.Pins)
	}
	return s
}

// TopologyRecord is the table's topology record. Between changes it names
// one topology (Active; Consulted is nil). A change from T1 to T2 goes
// through two more records, each written by AdvanceTopology:
//
//	{Active: T1}                  stable
//	{Active: T1, Consulted: T2}   prepare: claims in T1's home, then a read in T2's
//	{Active: T2, Consulted: T1}   switch:  claims in T2's home, then a read in T1's
//	{Active: T2}                  stable
//
// During a change, a claim is made in the key's home under Active, and
// then the key's home under Consulted, when it differs, is read
// (consistently): a live record there decides the request (replay, 409,
// 422) and the claim is released or completed with that record's
// response. Two processes on consecutive records therefore always meet:
// either they claim the same item in the same region, or each writes its
// own home before reading the other's, so at least one of them sees the
// other's claim.
type TopologyRecord struct {
	// Version increases by one with every write of the record.
	Version   int64
	Active    Topology
	Consulted *Topology
}

// Changing reports whether a change is in progress (Consulted is set).
func (r *TopologyRecord) Changing() bool { return r != nil && r.Consulted != nil }

// Allows reports whether a Store configured with t may serve under r:
// t is r's Active or Consulted topology.
func (r *TopologyRecord) Allows(t Topology) bool {
	return r.Active.Equal(t) || (r.Consulted != nil && r.Consulted.Equal(t))
}

func (r *TopologyRecord) String() string {
	s := "v" + strconv.FormatInt(r.Version, 10) + " active " + r.Active.String()
	if r.Consulted != nil {
		s += " consulted " + r.Consulted.String()
	}
	return s
}

// TopologyClient is the DynamoDB calls that read and write the topology
// record. *dynamodb.Client satisfies it.
type TopologyClient interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

var _ TopologyClient = (*dynamodb.Client)(nil)

// LoadTopology reads the table's topology record in region r with a
// consistent read (of r's replica: a record written in another region is
// seen there after replication). It returns ErrNoTopology when r holds
// none, and a *dynamostore.StoreError when r cannot be read.
func LoadTopology(ctx context.Context, r Region) (*TopologyRecord, error) {
	if r.Client == nil || r.Store == nil {
		return nil, fmt.Errorf("%w: region %q has no Client or Store", ErrInvalidConfig, r.Name)
	}
	out, err := r.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(r.Store.Table()),
		Key:            topologyItemKey(r.Store),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, &dynamostore.StoreError{Op: "GetItem", Err: err}
	}
	if len(out.Item) == 0 {
		return nil, ErrNoTopology
	}
	return decodeTopology(out.Item)
}

// AdvanceTopology moves the table's topology record one step towards the
// topology to, writing it in region r with a condition on the version it
// read there (a concurrent writer in r makes it fail with
// ErrTopologyStep). It returns the record as written, or as it is when no
// step is needed:
//
//   - no record: {Active: to} (the first record);
//   - {Active: to}: nothing to do;
//   - {Active: T}: {Active: T, Consulted: to} (prepare);
//   - {Active: T, Consulted: to}: {Active: to, Consulted: T} (switch);
//   - {Active: to, Consulted: T}: {Active: to} (finish);
//   - a change from T to U with to neither T nor U: refused
//     (ErrTopologyStep); finish or revert that change first. Reverting is
//     stepping towards T: from prepare to {Active: T}, from switch back to
//     prepare.
//
// Between two steps every process must have read the record written by
// the first (Options.TopologyRefresh after it replicated to every region,
// plus the longest request): multiregion/README.md has the procedure.
// Always write the record through the same region: writes in two regions
// at once are resolved last writer wins.
func AdvanceTopology(ctx context.Context, r Region, to Topology) (*TopologyRecord, error) {
	if err := to.validate(); err != nil {
		return nil, err
	}
	cur, err := LoadTopology(ctx, r)
	var next TopologyRecord
	switch {
	case errors.Is(err, ErrNoTopology):
		cur = nil
		next = TopologyRecord{Version: 1, Active: to}
	case err != nil:
		return nil, err
	case !cur.Changing() && cur.Active.Equal(to):
		return cur, nil
	case !cur.Changing():
		next = TopologyRecord{Version: cur.Version + 1, Active: cur.Active, Consulted: &to}
	case cur.Consulted.Equal(to):
		prev := cur.Active
		next = TopologyRecord{Version: cur.Version + 1, Active: *cur.Consulted, Consulted: &prev}
	case cur.Active.Equal(to):
		next = TopologyRecord{Version: cur.Version + 1, Active: cur.Active}
	default:
		return nil, fmt.Errorf("%w: a change from %s to %s is in progress (record %s); finish or revert it before moving to %s",
			ErrTopologyStep, cur.Consulted, cur.Active, cur, to)
	}
	if err := writeTopology(ctx, r, cur, &next); err != nil {
		return nil, err
	}
	return &next, nil
}

// writeTopology writes next in r on condition that r holds cur (nil: no
// record).
func writeTopology(ctx context.Context, r Region, cur, next *TopologyRecord) error {
	in := &dynamodb.PutItemInput{TableName: aws.String(r.Store.Table()), Item: encodeTopology(next, topologyItemKey(r.Store))}
	if cur == nil {
		in.ConditionExpression = aws.String("attribute_not_exists(#pk)")
		in.ExpressionAttributeNames = map[string]string{"#pk": r.Store.Options().Schema.PartitionKey}
	} else {
		in.ConditionExpression = aws.String("#v = :v")
		in.ExpressionAttributeNames = map[string]string{"#v": attrTopoVersion}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": &types.AttributeValueMemberN{Value: strconv.FormatInt(cur.Version, 10)}}
	}
	if _, err := r.Client.PutItem(ctx, in); err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return fmt.Errorf("%w: the record changed in %s since it was read; read it again", ErrTopologyStep, r.Name)
		}
		return &dynamostore.StoreError{Op: "PutItem", Err: err}
	}
	return nil
}

// topologyItemKey returns the primary key of the topology record in the
// key schema of st.
func topologyItemKey(st *dynamostore.Store) map[string]types.AttributeValue {
	ks := keyschema.Schema(st.Options().Schema)
	return ks.ItemKey(ks.Namespaced(TopologyPartitionKey))
}

func encodeTopology(rec *TopologyRecord, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	item := key
	item[attrTopoVersion] = &types.AttributeValueMemberN{Value: strconv.FormatInt(rec.Version, 10)}
	put := func(regionsAttr, pinsAttr string, t Topology) {
		rs := slices.Clone(t.Regions)
		slices.Sort(rs)
		l := make([]types.AttributeValue, len(rs))
		for i, r := range rs {
			l[i] = &types.AttributeValueMemberS{Value: r}
		}
		item[regionsAttr] = &types.AttributeValueMemberL{Value: l}
		m := make(map[string]types.AttributeValue, len(t.Pins))
		for scope, pin := range t.Pins {
			m[scope] = &types.AttributeValueMemberS{Value: pin}
		}
		item[pinsAttr] = &types.AttributeValueMemberM{Value: m}
	}
	put(attrTopoRegions, attrTopoPins, rec.Active)
	if rec.Consulted != nil {
		put(attrTopoConsulted, attrTopoConsPins, *rec.Consulted)
	}
	return item
}

func decodeTopology(item map[string]types.AttributeValue) (*TopologyRecord, error) {
	corrupt := func(attr string) error {
		return fmt.Errorf("%w: topology record attribute %q", dynamostore.ErrCorruptRecord, attr)
	}
	v, ok := item[attrTopoVersion].(*types.AttributeValueMemberN)
	if !ok {
		return nil, corrupt(attrTopoVersion)
	}
	version, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return nil, corrupt(attrTopoVersion)
	}
	get := func(regionsAttr, pinsAttr string) (Topology, error) {
		var t Topology
		l, ok := item[regionsAttr].(*types.AttributeValueMemberL)
		if !ok {
			return t, corrupt(regionsAttr)
		}
		for _, av := range l.Value {
			s, ok := av.(*types.AttributeValueMemberS)
			if !ok {
				return t, corrupt(regionsAttr)
			}
			t.Regions = append(t.Regions, s.Value)
		}
		if m, ok := item[pinsAttr].(*types.AttributeValueMemberM); ok {
			for scope, av := range m.Value {
				s, ok := av.(*types.AttributeValueMemberS)
				if !ok {
					return t, corrupt(pinsAttr)
				}
				if t.Pins == nil {
					t.Pins = map[string]string{}
				}
				t.Pins[scope] = s.Value
			}
		}
		if t.validate() != nil {
			return t, corrupt(regionsAttr)
		}
		return t, nil
	}
	rec := &TopologyRecord{Version: version}
	if rec.Active, err = get(attrTopoRegions, attrTopoPins); err != nil {
		return nil, err
	}
	if _, ok := item[attrTopoConsulted]; ok {
		c, err := get(attrTopoConsulted, attrTopoConsPins)
		if err != nil {
			return nil, err
		}
		rec.Consulted = &c
	}
	return rec, nil
}

// topologyCache is a Store's view of the topology record.
type topologyCache struct {
	mu     sync.Mutex
	rec    *TopologyRecord // nil: no record
	split  error           // regions held different records of one version
	readAt time.Time
	loaded bool
}

// configured returns the Store's own topology: its region names and pins.
func (s *Store) configured() Topology {
	rs := slices.Clone(s.names)
	slices.Sort(rs)
	return Topology{Regions: rs, Pins: maps.Clone(s.opts.Pins)}
}

// CheckTopology reads the table's topology record now, with a consistent
// read in every region (one GetItem each), and checks the Store's
// configuration against the record of the highest version found: a step
// written through any region is seen at once, without waiting for its
// replication. When every region answers that it holds no record, the
// Store writes its own configuration as the first one (version 1) in
// Options.Local's region, on condition that there is none (a record
// another process wrote first is read instead). It returns the record; nil
// when no region that could be read holds one and some could not be read
// (the Store then homes keys by its configuration until the next read). It
// fails with a *ConfigError matching
// ErrTopologyMismatch when the configuration is neither the record's
// active topology nor, during a change, its consulted one, and with a
// *RegionError when no region could be read. Claim and Get run the same
// check when the record they last read is older than
// Options.TopologyRefresh; call CheckTopology at startup to fail fast.
// HomeRegion mode only (other modes return nil, nil).
func (s *Store) CheckTopology(ctx context.Context) (*TopologyRecord, error) {
	if s.opts.Mode != HomeRegion {
		return nil, nil
	}
	return s.refreshTopology(ctx)
}

// topology returns the record to route by: the cached one while fresh.
func (s *Store) topology(ctx context.Context) (*TopologyRecord, error) {
	c := &s.topo
	c.mu.Lock()
	now := s.local.store.Options().Now()
	if c.loaded && now.Sub(c.readAt) < s.opts.TopologyRefresh && now.Sub(c.readAt) >= 0 {
		rec, split := c.rec, c.split
		c.mu.Unlock()
		if split != nil {
			return nil, split
		}
		return rec, s.checkRecord(rec)
	}
	c.mu.Unlock()
	return s.refreshTopology(ctx)
}

func (s *Store) refreshTopology(ctx context.Context) (*TopologyRecord, error) {
	readAt := s.local.store.Options().Now()
	order := append([]*region{s.local}, s.regions...)
	var tried []*region
	for _, r := range order {
		if !slices.ContainsFunc(tried, func(t *region) bool { return t.name == r.name }) {
			tried = append(tried, r)
		}
	}
	// Every region is read at once, each within TopologyReadTimeout, so a
	// region that does not answer delays a refresh by that bound at most.
	type read struct {
		rec *TopologyRecord
		err error
	}
	reads := make([]read, len(tried))
	var wg sync.WaitGroup
	for i, r := range tried {
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, s.opts.TopologyReadTimeout)
			defer cancel()
			// A timed-out read is a *dynamostore.StoreError while ctx
			// lives: an unreachable region below.
			rec, err := LoadTopology(rctx, Region{Name: r.name, Store: r.store, Client: r.client})
			reads[i] = read{rec, err}
		})
	}
	wg.Wait()
	var (
		names   []string
		best    *TopologyRecord
		lastErr error
		absent  int
		twin    *TopologyRecord // another record of best's version
	)
	for i, r := range tried {
		names = append(names, r.name)
		rec, err := reads[i].rec, reads[i].err
		switch {
		case errors.Is(err, ErrNoTopology):
			absent++
		case err != nil && unavailable(ctx, err):
			lastErr = err
		case err != nil:
			return nil, err
		case best == nil || rec.Version > best.Version:
			best, twin = rec, nil
		case rec.Version == best.Version && !rec.same(best):
			twin = rec
		}
	}
	if best == nil && absent == len(names) {
		// No region holds a record: write the first one in Local's.
		first := &TopologyRecord{Version: 1, Active: s.configured()}
		r := Region{Name: s.local.name, Store: s.local.store, Client: s.local.client}
		err := writeTopology(ctx, r, nil, first)
		switch {
		case errors.Is(err, ErrTopologyStep):
			if first, err = LoadTopology(ctx, r); err != nil { // another process wrote it first
				return nil, err
			}
		case err != nil:
			return nil, err
		}
		best = first
	}
	if best == nil && absent == 0 {
		return nil, &RegionError{Regions: names, Err: lastErr}
	}
	// Two records of one version that differ were written concurrently
	// (two first records, each in its writer's region, conditional there
	// only): replication keeps one of them in the end, and until then
	// neither is the table's, so nothing is served.
	var split error
	if twin != nil {
		split = &ConfigError{Mode: s.opts.Mode, Field: "regions", Err: ErrTopologyMismatch,
			Reason: "the regions hold two different topology records of version " + strconv.FormatInt(best.Version, 10) + " (" +
				best.String() + "; " + twin.String() + "), written concurrently; keys are refused until replication leaves one"}
	}
	// best is nil when some regions hold no record and the others cannot
	// be read: the Store homes by its configuration until the next read.
	s.topo.mu.Lock()
	if !s.topo.loaded || !readAt.Before(s.topo.readAt) {
		s.topo.rec, s.topo.split, s.topo.readAt, s.topo.loaded = best, split, readAt, true
	}
	s.topo.mu.Unlock()
	if split != nil {
		return nil, split
	}
	return best, s.checkRecord(best)
}

// same reports whether r and o are one record: one version of the same
// active and consulted topologies.
func (r *TopologyRecord) same(o *TopologyRecord) bool {
	if r.Version != o.Version || !r.Active.Equal(o.Active) || (r.Consulted == nil) != (o.Consulted == nil) {
		return false
	}
	return r.Consulted == nil || r.Consulted.Equal(*o.Consulted)
}

// checkRecord refuses a record the configuration contradicts.
func (s *Store) checkRecord(rec *TopologyRecord) error {
	if rec == nil || rec.Allows(s.configured()) {
		return nil
	}
	return &ConfigError{Mode: s.opts.Mode, Field: "regions", Err: ErrTopologyMismatch,
		Reason: "this process homes keys over " + s.configured().String() + " but the table's topology record is " + rec.String() +
			"; deploy the record's topology, or change the record step by step with AdvanceTopology (see multiregion/README.md)"}
}

// routed is how one request's key is routed under the topology record.
type routed struct {
	home, other *region // other: the consulted home when it differs, or nil
}

// route returns the homes of (scope, key) under a changing record, or a
// *RegionError when the Store has no client for one of them.
func (s *Store) route(rec *TopologyRecord, scope, key string) (routed, error) {
	var rt routed
	for i, t := range []Topology{rec.Active, *rec.Consulted} {
		name := t.Home(scope, key)
		r := s.byName[name]
		if r == nil {
			return rt, &RegionError{Regions: []string{name}, Err: &dynamostore.StoreError{Op: "route", Err: ErrRegionNotConfigured}}
		}
		if i == 0 {
			rt.home = r
		} else if r != rt.home {
			rt.other = r
		}
	}
	return rt, nil
}

// changeClaim is Claim while the topology record changes: a claim in the
// active home between two consistent reads of the consulted home. Failover
// is suspended; the fence is not, over fenceRegions.
func (s *Store) changeClaim(ctx context.Context, req idemkey.Request, rec *TopologyRecord) (*dynamostore.Claim, error) {
	if err := s.checkScope(req.Scope); err != nil {
		return nil, err
	}
	rt, err := s.route(rec, req.Scope, req.Key)
	if err != nil {
		return nil, err
	}
	failClosed := func(r *region, err error) error {
		s.observe(Event{Kind: EventFailClosed, Scope: req.Scope, Key: req.Key, Home: rt.home.name, Region: r.name, Err: err})
		return &RegionError{Regions: []string{r.name}, Err: err}
	}
	// acquired returns the claim acquired in the home, after the fence.
	acquired := func(c *dynamostore.Claim) (*dynamostore.Claim, error) {
		if s.fenced() {
			return s.fenceCheck(ctx, req, rt.home, fenceRegions(rec, req.Scope, req.Key), c)
		}
		return userClaim(c), nil
	}
	if rt.other != nil {
		// A record in the consulted home decides the request without a
		// write in the active home, whose replicated write could otherwise
		// replace it there.
		if out, err := s.consult(ctx, req, rt.other, nil); err != nil || out != nil {
			if err != nil && unavailable(ctx, err) {
				return nil, failClosed(rt.other, err)
			}
			return out, err
		}
	}
	c, err := rt.home.store.Claim(ctx, req)
	switch {
	case err != nil && unavailable(ctx, err):
		return nil, failClosed(rt.home, err)
	case err != nil:
		return nil, err
	case c.Result != dynamostore.Acquired:
		return userClaim(c), nil
	case rt.other == nil:
		return acquired(c)
	}
	out, err := s.consult(ctx, req, rt.other, c)
	switch {
	case err != nil:
		_ = rt.home.store.Release(ctx, c) // nothing was found that a replicated delete could erase
		if unavailable(ctx, err) {
			return nil, failClosed(rt.other, err)
		}
		return nil, err
	case out == nil:
		return acquired(c)
	case out.Result == dynamostore.Replay:
		// Copy the consulted home's response into the active home, so
		// that retries are answered there too. On failure the claim is
		// left to its lease: its delete, replicated into the other home,
		// could erase the record that answered.
		_, _ = rt.home.store.Commit(ctx, c, *out.Record.Response, nil)
	}
	// In flight or another request's there: the claim is left to its
	// lease, not deleted. The other side's later writes are newer and win
	// over it in both regions; a replicated delete could erase them.
	return out, nil
}

// fenceRegions lists every region of both topologies, the key's orders
// first: a failover record from before the change may lie in a region being
// removed, or in the active home itself.
func fenceRegions(rec *TopologyRecord, scope, key string) []string {
	var names []string
	for _, t := range []Topology{rec.Active, *rec.Consulted} {
		for _, name := range t.Order(scope, key) {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	return names
}

// consult returns the outcome a live record of req's key in other (the
// consulted home) decides, or nil; own's replicated copy decides nothing.
// An abandoned record there is taken over and released, fencing its owner.
func (s *Store) consult(ctx context.Context, req idemkey.Request, other *region, own *dynamostore.Claim) (*dynamostore.Claim, error) {
	rec, err := other.store.Get(ctx, req.Scope, req.Key)
	if errors.Is(err, dynamostore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if own != nil && rec.LockToken == own.Record.LockToken {
		return nil, nil
	}
	if out, ok := decideExisting(rec, req, other.store.Options().Now()); ok {
		return &dynamostore.Claim{Result: out, Record: userView(rec)}, nil
	}
	c, err := other.store.Claim(ctx, req)
	if err != nil {
		return nil, err
	}
	if c.Result != dynamostore.Acquired {
		return userClaim(c), nil
	}
	if err := other.store.Release(ctx, c); err != nil {
		return nil, err
	}
	return nil, nil
}

// changeGet is Get in HomeRegion mode while the topology record changes:
// the key's home under the active topology, then under the consulted one,
// then (with the fence) the key's failover records in every region of
// either topology.
func (s *Store) changeGet(ctx context.Context, scope, key string, rec *TopologyRecord) (*dynamostore.Record, error) {
	rt, err := s.route(rec, scope, key)
	if err != nil {
		return nil, err
	}
	for _, r := range []*region{rt.home, rt.other} {
		if r == nil {
			continue
		}
		got, err := r.store.Get(ctx, scope, key)
		switch {
		case err == nil:
			return userView(got), nil
		case errors.Is(err, dynamostore.ErrNotFound):
			continue
		case unavailable(ctx, err):
			return nil, &RegionError{Regions: []string{r.name}, Err: err}
		default:
			return nil, err
		}
	}
	if s.fenced() {
		return s.failoverGet(ctx, scope, key, rt.home, fenceRegions(rec, scope, key))
	}
	return nil, dynamostore.ErrNotFound
}

// isHomeClaim reports whether a claim held in region r is a claim of the
// key's home record (not a failover record): r is the key's home under the
// Store's configuration or under either topology of the record it last
// read.
func (s *Store) isHomeClaim(r *region, scope, key string) bool {
	if s.order(scope, key)[0] == r {
		return true
	}
	s.topo.mu.Lock()
	rec := s.topo.rec
	s.topo.mu.Unlock()
	if rec == nil {
		return false
	}
	if rec.Active.Home(scope, key) == r.name {
		return true
	}
	return rec.Consulted != nil && rec.Consulted.Home(scope, key) == r.name
}

// heldIn returns the region holding c and c as that region's store knows
// it: a home claim (under the configuration or the topology record) as it
// is, a failover claim under its failover scope.
func (s *Store) heldIn(c *dynamostore.Claim) (*region, *dynamostore.Claim, error) {
	if c != nil && c.Record != nil {
		if r := s.byName[c.Record.Region]; r != nil && s.isHomeClaim(r, c.Record.Scope, c.Record.Key) {
			return r, c, nil
		}
	}
	return s.claimRegion(c)
}
