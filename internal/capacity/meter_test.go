package capacity_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// Units are capacity units.
type Units struct{ WCU, RCU float64 }

// Add returns u plus v.
func (u Units) Add(v Units) Units { return Units{u.WCU + v.WCU, u.RCU + v.RCU} }

// Meter computes the capacity units of the calls of the clients it is
// installed on (Install). It keeps the size of every item those calls wrote
// (a shadow of the tables), so it charges a replaced or deleted item by its
// size; calls made by other clients are not seen, so every write to the
// metered tables must go through a metered client.
//
// It also asks DynamoDB for ReturnConsumedCapacity TOTAL on every call and
// adds up what the backend reports (Reported), to cross-check the rules
// where a backend reports capacity (DynamoDB; the embedded emulator and
// moto report estimates, and nothing for failed calls).
//
// When Unbundled is set, a TransactWriteItems is charged as if each of its
// actions had been sent as its own non-transactional write: the price of
// the same writes without atomicity.
type Meter struct {
	// Unbundled charges transactions as separate writes.
	Unbundled bool

	keys map[string][]string // table: key attribute names

	mu       sync.Mutex
	sizes    map[string]int // table + key: item size
	computed Units
	reported Units
	err      error
}

// NewMeter returns a Meter for tables whose key attributes keys names
// (table name: partition key and, if any, sort key attribute names).
func NewMeter(keys map[string][]string) *Meter {
	return &Meter{keys: keys, sizes: map[string]int{}}
}

// Install adds the meter to a client's options, e.g.
// dynamodb.NewFromConfig(cfg, m.Install).
func (m *Meter) Install(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("idemkeyCapacityMeter",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				m.ask(in.Parameters)
				out, md, err := next.HandleInitialize(ctx, in)
				m.charge(in.Parameters, out.Result, err)
				return out, md, err
			}), middleware.Before)
	})
}

// Take returns the units computed and reported since the last Take and
// resets both, with the first error met (a call the rules do not cover).
func (m *Meter) Take() (computed, reported Units, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	computed, reported, err = m.computed, m.reported, m.err
	m.computed, m.reported, m.err = Units{}, Units{}, nil
	return computed, reported, err
}

func (m *Meter) ask(params any) {
	switch in := params.(type) {
	case *dynamodb.PutItemInput:
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	case *dynamodb.DeleteItemInput:
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	case *dynamodb.GetItemInput:
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	case *dynamodb.TransactWriteItemsInput:
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	}
}

// id names the item of table with the key attributes of item.
func (m *Meter) id(table string, item map[string]types.AttributeValue) (string, error) {
	names, ok := m.keys[table]
	if !ok {
		return "", fmt.Errorf("capacity: table %q has no known key", table)
	}
	id := table
	for _, n := range names {
		v, ok := item[n].(*types.AttributeValueMemberS)
		if !ok {
			return "", fmt.Errorf("capacity: item of %q without String key %q", table, n)
		}
		id += "\x00" + v.Value
	}
	return id, nil
}

// write is one write the rules charge: the item it replaces or deletes
// (old, 0 when none) and the item it writes (new, 0 for a delete).
type write struct {
	id       string
	old, new int
	deletes  bool
}

func (w write) units() float64 { return WriteUnits(max(w.old, w.new)) }

func (m *Meter) charge(params, result any, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fail := func(e error) {
		if m.err == nil {
			m.err = e
		}
	}
	var ccf *types.ConditionalCheckFailedException
	failed := errors.As(err, &ccf)
	if err != nil && !failed {
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			fail(fmt.Errorf("capacity: a call failed outside the rules: %w", err))
			return
		}
		failed = true
	}
	put := func(table string, item map[string]types.AttributeValue) (write, bool) {
		id, e := m.id(table, item)
		if e != nil {
			fail(e)
			return write{}, false
		}
		return write{id: id, old: m.sizes[id], new: ItemSize(item)}, true
	}
	del := func(table string, key map[string]types.AttributeValue) (write, bool) {
		id, e := m.id(table, key)
		if e != nil {
			fail(e)
			return write{}, false
		}
		return write{id: id, old: m.sizes[id], deletes: true}, true
	}
	apply := func(w write) {
		if w.deletes {
			delete(m.sizes, w.id)
		} else {
			m.sizes[w.id] = w.new
		}
	}
	switch in := params.(type) {
	case *dynamodb.PutItemInput:
		w, ok := put(*in.TableName, in.Item)
		if !ok {
			return
		}
		m.computed.WCU += w.units()
		if !failed {
			apply(w)
			m.report(result.(*dynamodb.PutItemOutput).ConsumedCapacity, false)
		}
	case *dynamodb.DeleteItemInput:
		w, ok := del(*in.TableName, in.Key)
		if !ok {
			return
		}
		m.computed.WCU += w.units()
		if !failed {
			apply(w)
			m.report(result.(*dynamodb.DeleteItemOutput).ConsumedCapacity, false)
		}
	case *dynamodb.GetItemInput:
		id, e := m.id(*in.TableName, in.Key)
		if e != nil {
			fail(e)
			return
		}
		m.computed.RCU += ReadUnits(m.sizes[id], in.ConsistentRead != nil && *in.ConsistentRead)
		m.report(result.(*dynamodb.GetItemOutput).ConsumedCapacity, true)
	case *dynamodb.TransactWriteItemsInput:
		var ws []write
		for _, a := range in.TransactItems {
			var w write
			ok := false
			switch {
			case a.Put != nil:
				w, ok = put(*a.Put.TableName, a.Put.Item)
			case a.Delete != nil:
				w, ok = del(*a.Delete.TableName, a.Delete.Key)
			default:
				fail(errors.New("capacity: only Put and Delete actions are modelled"))
			}
			if !ok {
				return
			}
			ws = append(ws, w)
		}
		factor := 2.0 // prepare and commit
		if failed || m.Unbundled {
			factor = 1 // the prepare phase only, or separate writes
		}
		for _, w := range ws {
			m.computed.WCU += factor * w.units()
			if !failed {
				apply(w)
			}
		}
		if !failed {
			for _, c := range result.(*dynamodb.TransactWriteItemsOutput).ConsumedCapacity {
				m.report(&c, false)
			}
		}
	default:
		fail(fmt.Errorf("capacity: %T is not modelled", params))
	}
}

// report adds a reported ConsumedCapacity (nil when the backend sent none)
// of a read or a write.
func (m *Meter) report(c *types.ConsumedCapacity, read bool) {
	if c == nil {
		return
	}
	w, r := c.WriteCapacityUnits, c.ReadCapacityUnits
	switch {
	case w != nil || r != nil:
		if w != nil {
			m.reported.WCU += *w
		}
		if r != nil {
			m.reported.RCU += *r
		}
	case c.CapacityUnits != nil && read:
		m.reported.RCU += *c.CapacityUnits
	case c.CapacityUnits != nil:
		m.reported.WCU += *c.CapacityUnits
	}
}
