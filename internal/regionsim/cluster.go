package regionsim

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/localstack"
)

// DefaultRegions are the regions of a cluster when Options.Regions is empty.
var DefaultRegions = []string{"us-east-1", "eu-west-1", "ap-southeast-2"}

// ErrCutOff is the error inside the connection error that a client of a
// cut-off region gets.
var ErrCutOff = errors.New("regionsim: region is cut off")

// Options configure a Cluster. The zero value of each field selects its
// default.
type Options struct {
	// Regions names the regions (default DefaultRegions).
	Regions []string
	// Lag is the replication lag: a change committed in one region is
	// applied to the others Lag after it was committed (by Clock), at the
	// first Pump from then on. Zero: at the next Pump.
	Lag time.Duration
	// Clock is the time of the replicator (default time.Now). Simulations
	// inject a virtual clock so that lag is deterministic.
	Clock func() time.Time
	// Shared makes every region a client of ONE emulator: a model of a
	// multi-Region strongly consistent (MRSC) table, whose conditional
	// writes are linearizable across regions because there is one copy.
	// Nothing is replicated; cutting a region off still fails its clients.
	// DescribeTable answers MultiRegionConsistency STRONG, as DynamoDB
	// describes an MRSC table.
	Shared bool
}

// Cluster is a set of emulated DynamoDB regions joined by a replicator
// with last-writer-wins conflict resolution, as on an MREC global table
// (see the package doc). Each region's writes (PutItem, UpdateItem,
// DeleteItem, TransactWriteItems; not BatchWriteItem) to a table created
// with CreateGlobalTable are captured at its front, stamped with the
// replicator's clock and a sequence number, and queued for every other
// region; an update's new image is read back while the region's writes are
// held. Pump applies them; a destination drops a change older than the
// version it holds. A Cluster is safe for concurrent use.
type Cluster struct {
	opts    Options
	regions []*Region
	byName  map[string]*Region

	mu     sync.Mutex
	queue  []*delivery
	tables map[string][]string // global table -> key attribute names
	origin map[string]string   // item id -> region that first wrote it
	seq    uint64
	errs   []error
}

// Region is one emulated region.
type Region struct {
	// Name is the region's name.
	Name string
	// Client is a client of the region for the code under test: its calls
	// fail with a connection error while the region is cut off, and its
	// writes are replicated. It makes one attempt per call (no SDK retries,
	// whose backoff would sleep in real time).
	Client *dynamodb.Client

	cluster  *Cluster
	endpoint *localstack.Endpoint // nil for the regions of a shared cluster but the first
	url      string
	raw      *http.Client
	down     atomic.Bool

	mu       sync.Mutex       // serialises a write with its capture, and deliveries
	versions map[string]stamp // item id -> stamp of the version this region holds
}

// stamp orders item versions for last-writer-wins.
type stamp struct {
	at  time.Time
	seq uint64
}

func (s stamp) after(o stamp) bool {
	if c := s.at.Compare(o.at); c != 0 {
		return c > 0
	}
	return s.seq > o.seq
}

// delivery is one change on its way to one region.
type delivery struct {
	due      time.Time
	seq      uint64
	src, dst *Region
	table    string
	id       string
	key      json.RawMessage // the item's key attributes
	image    json.RawMessage // the new item, nil for a deletion
	stamp    stamp
}

// Start starts a cluster: one embedded emulator per region (one in all for
// Shared). The caller must Close it.
func Start(ctx context.Context, optFns ...func(*Options)) (*Cluster, error) {
	c := &Cluster{byName: map[string]*Region{}, tables: map[string][]string{}, origin: map[string]string{}}
	for _, fn := range optFns {
		fn(&c.opts)
	}
	if len(c.opts.Regions) == 0 {
		c.opts.Regions = DefaultRegions
	}
	if c.opts.Clock == nil {
		c.opts.Clock = time.Now
	}
	for _, name := range c.opts.Regions {
		if name == "" || c.byName[name] != nil {
			_ = c.Close()
			return nil, fmt.Errorf("regionsim: region names must be distinct and not empty: %q", c.opts.Regions)
		}
		r := &Region{Name: name, cluster: c, raw: &http.Client{}, versions: map[string]stamp{}}
		front := &front{region: r}
		if c.opts.Shared && len(c.regions) > 0 {
			r.url = c.regions[0].url
			r.Client = c.regions[0].endpoint.NewClient(func(o *dynamodb.Options) {
				o.HTTPClient = front
				o.Retryer = aws.NopRetryer{}
				o.Region = name
			})
		} else {
			ep, err := localstack.Start(ctx, func(o *localstack.Options) {
				o.Embedded = true
				o.Region = name
				o.HTTPClient = front
			})
			if err != nil {
				_ = c.Close()
				return nil, err
			}
			r.endpoint, r.url = ep, ep.URL
			r.Client = ep.NewClient(func(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} })
		}
		c.regions = append(c.regions, r)
		c.byName[name] = r
	}
	return c, nil
}

// Close stops every emulator.
func (c *Cluster) Close() error {
	var errs []error
	for _, r := range c.regions {
		if r.endpoint != nil {
			errs = append(errs, r.endpoint.Close())
		}
	}
	return errors.Join(errs...)
}

// Regions returns the regions in configuration order.
func (c *Cluster) Regions() []*Region { return append([]*Region(nil), c.regions...) }

// Region returns the region name, or nil.
func (c *Cluster) Region(name string) *Region { return c.byName[name] }

// Names returns the region names in configuration order.
func (c *Cluster) Names() []string { return append([]string(nil), c.opts.Regions...) }

// CreateGlobalTable creates table in every region (once for Shared), on
// demand, with a String partition key named hashKey, and replicates it.
func (c *Cluster) CreateGlobalTable(ctx context.Context, table, hashKey string) error {
	for _, r := range c.regions {
		if c.opts.Shared && r != c.regions[0] {
			break
		}
		setup := r.endpoint.NewClient(func(o *dynamodb.Options) { o.HTTPClient = r.raw })
		_, err := setup.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            &table,
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: &hashKey, AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: &hashKey, KeyType: types.KeyTypeHash}},
		})
		if err != nil {
			return fmt.Errorf("regionsim: creating %s in %s: %w", table, r.Name, err)
		}
	}
	c.mu.Lock()
	c.tables[table] = []string{hashKey}
	c.mu.Unlock()
	return nil
}

// CutOff makes the region unreachable: its clients' calls fail with a
// connection error, and replication to and from it is held until Restore.
func (c *Cluster) CutOff(name string) { c.mustRegion(name).down.Store(true) }

// Restore makes a cut-off region reachable again; the changes held for it
// and from it flow at the next Pump.
func (c *Cluster) Restore(name string) { c.mustRegion(name).down.Store(false) }

// Down reports whether the region is cut off.
func (c *Cluster) Down(name string) bool { return c.mustRegion(name).down.Load() }

func (c *Cluster) mustRegion(name string) *Region {
	r := c.byName[name]
	if r == nil {
		panic("regionsim: unknown region " + name)
	}
	return r
}

// Pump applies every queued change that is due by the clock and whose
// source and destination regions are reachable, in commit order, and
// returns how many it applied (dropped ones, which lost to a later version,
// included). It returns the first error of a delivery or of a capture since
// the last Pump; a delivery that failed is dropped.
func (c *Cluster) Pump(ctx context.Context) (int, error) {
	now := c.opts.Clock()
	c.mu.Lock()
	var ready []*delivery
	rest := c.queue[:0]
	for _, d := range c.queue {
		if !d.due.After(now) && !d.src.down.Load() && !d.dst.down.Load() {
			ready = append(ready, d)
		} else {
			rest = append(rest, d)
		}
	}
	c.queue = rest
	errs := c.errs
	c.errs = nil
	c.mu.Unlock()
	for _, d := range ready {
		if err := d.dst.apply(ctx, d); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return len(ready), errs[0]
	}
	return len(ready), nil
}

// Pending returns the number of queued changes (per destination).
func (c *Cluster) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// Origin returns the region in which the item of table whose String hash
// key is value was first written, or "" if no write of it was captured.
func (c *Cluster) Origin(table, hashKey, value string) string {
	v, _ := json.Marshal(value)
	keyJSON, err := canonicalKey(map[string]json.RawMessage{hashKey: json.RawMessage(`{"S":` + string(v) + `}`)})
	if err != nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.origin[table+"\x00"+string(keyJSON)]
}

// Items returns the items of table in region, read past the region's
// front (it works while the region is cut off).
func (c *Cluster) Items(ctx context.Context, region, table string) ([]map[string]types.AttributeValue, error) {
	r := c.mustRegion(region)
	client := dynamodb.NewFromConfig(aws.Config{Region: r.Name, Credentials: aws.AnonymousCredentials{}}, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(r.url)
		o.HTTPClient = r.raw
	})
	var items []map[string]types.AttributeValue
	in := &dynamodb.ScanInput{TableName: &table, ConsistentRead: aws.Bool(true)}
	for {
		out, err := client.Scan(ctx, in)
		if err != nil {
			return nil, err
		}
		items = append(items, out.Items...)
		if len(out.LastEvaluatedKey) == 0 {
			return items, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// ExpireTTL plays DynamoDB TTL in region: it deletes every item of table
// whose attribute attr (a Number of epoch seconds) is before the clock's
// second, and replicates each deletion as DynamoDB replicates TTL deletes
// on a global table: like any other write, stamped with the time of the
// deletion. Last writer wins, so a deletion of an old version that is later
// than a newer version written in another region, and not yet replicated
// here, erases the newer version in every region. Items without attr are
// kept. It runs while the region is cut off (TTL runs inside the region;
// replication waits), and returns how many items it deleted.
func (c *Cluster) ExpireTTL(ctx context.Context, region, table, attr string) (int, error) {
	r := c.mustRegion(region)
	c.mu.Lock()
	_, global := c.tables[table]
	c.mu.Unlock()
	if !global {
		return 0, fmt.Errorf("regionsim: ExpireTTL: %s is not a global table", table)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := c.opts.Clock().Unix()
	in := map[string]any{"TableName": table, "ConsistentRead": true}
	deleted := 0
	for {
		var page struct {
			Items            []map[string]json.RawMessage
			LastEvaluatedKey map[string]json.RawMessage
		}
		if err := r.call(ctx, "Scan", in, &page); err != nil {
			return deleted, err
		}
		for _, item := range page.Items {
			var v struct{ N string }
			if json.Unmarshal(item[attr], &v) != nil || v.N == "" {
				continue
			}
			if exp, err := strconv.ParseInt(v.N, 10, 64); err != nil || exp >= now {
				continue
			}
			ref, err := c.itemKey(table, item)
			if err != nil {
				return deleted, err
			}
			keyJSON, err := canonicalKey(ref.key)
			if err != nil {
				return deleted, err
			}
			if err := r.call(ctx, "DeleteItem", map[string]any{"TableName": table, "Key": json.RawMessage(keyJSON)}, nil); err != nil {
				return deleted, err
			}
			if err := c.captureItem(ctx, r, ref); err != nil {
				return deleted, err
			}
			deleted++
		}
		if len(page.LastEvaluatedKey) == 0 {
			return deleted, nil
		}
		in["ExclusiveStartKey"] = page.LastEvaluatedKey
	}
}

// itemKey returns the deletion of item of a replicated table.
func (c *Cluster) itemKey(table string, item map[string]json.RawMessage) (itemRef, error) {
	c.mu.Lock()
	attrs := c.tables[table]
	c.mu.Unlock()
	key := map[string]json.RawMessage{}
	for _, name := range attrs {
		v, ok := item[name]
		if !ok {
			return itemRef{}, fmt.Errorf("regionsim: item of %s without key attribute %s", table, name)
		}
		key[name] = v
	}
	return itemRef{table: table, key: key, deleted: true, known: true}, nil
}

// capture records the changes of a successful write of op in r. The caller
// holds r.mu, so no other write or delivery interleaves in r.
func (c *Cluster) capture(ctx context.Context, r *Region, op string, body []byte) {
	refs, err := c.writtenItems(op, body)
	if err == nil && len(refs) > 0 {
		for _, ref := range refs {
			if err = c.captureItem(ctx, r, ref); err != nil {
				break
			}
		}
	}
	if err != nil {
		c.mu.Lock()
		c.errs = append(c.errs, fmt.Errorf("regionsim: capturing %s in %s: %w", op, r.Name, err))
		c.mu.Unlock()
	}
}

// itemRef names an item of a replicated table, with its new image when
// the write says it: a put replaces the whole item, a delete removes it.
type itemRef struct {
	table   string
	key     map[string]json.RawMessage
	image   json.RawMessage // the put item
	deleted bool
	known   bool // image or deleted is the new state; no read-back needed
}

// writtenItems lists the items of replicated tables that a write changed.
func (c *Cluster) writtenItems(op string, body []byte) ([]itemRef, error) {
	type action struct {
		TableName string
		Item      map[string]json.RawMessage
		Key       map[string]json.RawMessage
		op        string
	}
	var actions []action
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem":
		var a action
		if err := json.Unmarshal(body, &a); err != nil {
			return nil, err
		}
		a.op = op
		actions = append(actions, a)
	case "TransactWriteItems":
		var in struct {
			TransactItems []struct{ Put, Update, Delete *action }
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, err
		}
		for _, ti := range in.TransactItems {
			for _, w := range []struct {
				a  *action
				op string
			}{{ti.Put, "PutItem"}, {ti.Update, "UpdateItem"}, {ti.Delete, "DeleteItem"}} {
				if w.a != nil {
					w.a.op = w.op
					actions = append(actions, *w.a)
				}
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var refs []itemRef
	for _, a := range actions {
		attrs, ok := c.tables[a.TableName]
		if !ok {
			continue // a regional table
		}
		key := a.Key
		if key == nil {
			key = map[string]json.RawMessage{}
			for _, name := range attrs {
				if v, ok := a.Item[name]; ok {
					key[name] = v
				}
			}
		}
		ref := itemRef{table: a.TableName, key: key}
		switch a.op {
		case "PutItem":
			image, err := json.Marshal(a.Item)
			if err != nil {
				return nil, err
			}
			ref.image, ref.known = image, true
		case "DeleteItem":
			ref.deleted, ref.known = true, true
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

func (c *Cluster) captureItem(ctx context.Context, r *Region, ref itemRef) error {
	keyJSON, err := canonicalKey(ref.key)
	if err != nil {
		return err
	}
	image := ref.image
	if !ref.known {
		var out struct{ Item json.RawMessage }
		if err := r.call(ctx, "GetItem", map[string]any{"TableName": ref.table, "Key": json.RawMessage(keyJSON), "ConsistentRead": true}, &out); err != nil {
			return err
		}
		image = out.Item
		if len(image) == 0 || string(image) == "null" || string(image) == "{}" {
			image = nil
		}
	}
	id := ref.table + "\x00" + string(keyJSON)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	st := stamp{at: c.opts.Clock(), seq: c.seq}
	r.versions[id] = st
	if _, ok := c.origin[id]; !ok && image != nil {
		c.origin[id] = r.Name
	}
	for _, dst := range c.regions {
		if dst == r {
			continue
		}
		c.queue = append(c.queue, &delivery{due: st.at.Add(c.opts.Lag), seq: st.seq, src: r, dst: dst,
			table: ref.table, id: id, key: keyJSON, image: image, stamp: st})
	}
	slices.SortStableFunc(c.queue, func(a, b *delivery) int { return cmp.Or(a.due.Compare(b.due), cmp.Compare(a.seq, b.seq)) })
	return nil
}

// canonicalKey encodes a key with sorted attribute names and compact values.
func canonicalKey(key map[string]json.RawMessage) ([]byte, error) {
	norm := make(map[string]json.RawMessage, len(key))
	for k, v := range key {
		var b bytes.Buffer
		if err := json.Compact(&b, v); err != nil {
			return nil, err
		}
		norm[k] = b.Bytes()
	}
	return json.Marshal(norm) // map keys are sorted
}

// apply writes a replicated change into r unless r holds a later version.
func (r *Region) apply(ctx context.Context, d *delivery) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.versions[d.id]; ok && !d.stamp.after(cur) {
		return nil // last writer wins: r's version is later
	}
	var err error
	if d.image != nil {
		err = r.call(ctx, "PutItem", map[string]any{"TableName": d.table, "Item": d.image}, nil)
	} else {
		err = r.call(ctx, "DeleteItem", map[string]any{"TableName": d.table, "Key": d.key}, nil)
	}
	if err != nil {
		return fmt.Errorf("regionsim: replicating into %s: %w", r.Name, err)
	}
	r.versions[d.id] = d.stamp
	return nil
}

// call sends one DynamoDB JSON request straight to the region's emulator,
// past its front.
func (r *Region) call(ctx context.Context, op string, in any, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := r.raw.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d: %s", op, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// front is the HTTP client of a region's Client: the place where a cut-off
// region refuses connections and where writes are captured.
type front struct{ region *Region }

// Do implements aws.HTTPClient.
func (f *front) Do(req *http.Request) (*http.Response, error) {
	r := f.region
	if r.down.Load() {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("%w: %s", ErrCutOff, r.Name)}
	}
	target := req.Header.Get("X-Amz-Target")
	op := target[strings.LastIndexByte(target, '.')+1:]
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems":
	case "DescribeTable":
		if r.cluster.opts.Shared {
			return describeStrong(r.raw.Do(req))
		}
		return r.raw.Do(req)
	default:
		return r.raw.Do(req)
	}
	if r.cluster.opts.Shared {
		return r.raw.Do(req)
	}
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		_ = req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	resp, err := r.raw.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	respBody, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	r.cluster.capture(req.Context(), r, op, body)
	return resp, nil
}

// describeStrong adds MultiRegionConsistency STRONG to a DescribeTable
// answer of a Shared cluster: the emulator describes a plain table, and the
// cluster models an MRSC one.
func describeStrong(resp *http.Response, err error) (*http.Response, error) {
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var out map[string]map[string]any
	if err := json.Unmarshal(body, &out); err != nil || out["Table"] == nil {
		return nil, fmt.Errorf("regionsim: DescribeTable answer without a table: %s", body)
	}
	out["Table"]["MultiRegionConsistency"] = "STRONG"
	if body, err = json.Marshal(out); err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	resp.Header.Del("X-Amz-Crc32")
	return resp, nil
}
