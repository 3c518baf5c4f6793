package localstack

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"
)

// maxRequestBody bounds the request bodies the front reads. DynamoDB's own
// limits are lower (16 MB for BatchWriteItem).
const maxRequestBody = 32 << 20

// maxBulkLoadBody bounds the body of a bulk load: 1 GiB.
const maxBulkLoadBody = 1 << 30

// NewHandler returns the embedded emulator as an http.Handler: a new, empty
// minidyn server (github.com/truora/minidyn/server) behind the front that
// closes minidyn's gaps. Every call returns an independent emulator with no
// tables. The handler speaks the DynamoDB JSON 1.0 protocol on POST requests
// and dispatches on the X-Amz-Target header; serve it over HTTP and point an
// SDK client's BaseEndpoint at it. Of optFns only the Disable fields and Now
// are used.
//
// The front serialises all requests with one mutex, so that a write and the
// read it may add afterwards are atomic with respect to other clients.
// Without this, minidyn itself would race: it runs CreateTable, UpdateTable,
// DeleteTable and DescribeTable without its lock. Only the work on the
// tables is serialised: a PutItem or TransactWriteItems request is decoded
// (and a transaction's ClientRequestToken digest computed) before the
// mutex is taken, and every response is written to the client after it is
// released. The front calls minidyn's engine (server.Client) directly with
// decoded requests for PutItem and for each step of a transaction, and
// serves every other request exactly as minidyn's server.Server does.
//
// What the front adds to minidyn, each switchable off in Options:
//
//   - UpdateTimeToLive and DescribeTimeToLive are answered by the front. It
//     records each table's TTL attribute and status with the API's
//     validation, but never deletes expired items (see the package doc).
//     Changes take effect at once: the ENABLING and DISABLING states and
//     DynamoDB's limit of one change per table per hour are not modelled.
//   - ListTables is answered by the front from the tables created and deleted
//     through this handler, sorted by name, with Limit (1 to 100, default
//     100), ExclusiveStartTableName and LastEvaluatedTableName.
//   - A ConditionalCheckFailedException from PutItem, UpdateItem or
//     DeleteItem carries the item's current attributes as Item when the
//     request asked for ReturnValuesOnConditionCheckFailure ALL_OLD and the
//     item exists, as on DynamoDB. Likewise each ConditionalCheckFailed
//     cancellation reason of TransactWriteItems whose action asked for
//     ALL_OLD.
//   - TransactWriteItems honours ClientRequestToken: a repeat of a
//     successful call with the same token and the same parameters (compared
//     as JSON, ignoring member order) within ClientRequestTokenWindow of its
//     completion succeeds without being applied again; the same token with
//     different parameters fails with IdempotentParameterMismatchException.
//     A token whose call failed is not remembered. Tokens must be 1 to 36
//     characters long.
//   - TransactWriteItems is applied action by action with minidyn's
//     single-item operations, in time proportional to its actions: each
//     action's item is read first, the actions are then applied in order
//     with their conditions, and when one fails the items of the actions
//     applied so far (and of the failed one) are put back as they were.
//     minidyn's own TransactWriteItems copies every table it writes, taking
//     time proportional to their sizes, and its rollback strips the type
//     from empty lists and maps in every item of those tables. The answers,
//     cancellation reasons included, are minidyn's; requests the front
//     cannot answer exactly so (see DisableItemTransactions) are left to
//     minidyn.
//   - Scan and Query responses carry ScannedCount, and Select COUNT returns
//     no Items.
//   - A parallel Scan (Segment, TotalSegments) reads one segment, not the
//     whole table: its parameters are validated as on DynamoDB, an item
//     belongs to the segment its partition key value hashes to, and Limit,
//     ExclusiveStartKey and LastEvaluatedKey work within the segment (a
//     whole parallel scan costs time quadratic in the table size).
//   - A Scan or Query whose ExclusiveStartKey names an item deleted since
//     continues after that key's position, as on DynamoDB, instead of
//     returning nothing: the front puts a placeholder item with that key
//     for the duration of the request (see holdStartKey).
//   - PutItem returns Attributes only when ReturnValues is ALL_OLD, and then
//     the item as it was before the put (minidyn always returns the new
//     item).
//   - Table descriptions from CreateTable and DescribeTable carry TableStatus
//     ACTIVE, from UpdateTable UPDATING and from DeleteTable DELETING, so
//     the SDK's table waiters work.
//   - A global secondary index that UpdateTable creates is backfilled at
//     once with the table's items that have its key attributes (minidyn
//     creates it empty), and is ACTIVE.
//   - A Query on a global secondary index is answered by the front, in time
//     proportional to the table's items and the index partition read, with
//     the sort key ordered by value, Limit counting the entries read and
//     a page ending at 1 MB; minidyn re-sorts the whole index on every
//     Query and orders numbers as strings.
//   - ConsumedCapacity, when asked for, is estimated by DynamoDB's rules:
//     item sizes as DynamoDB counts them, the whole items a Scan or Query
//     read (the index entries, for an index), the larger of the item
//     before and after a write, and the writes a global secondary index
//     adds (one to put or remove an entry, two to change its key).
//
// Two more are always on. A request with a null attribute value (an item,
// key or expression attribute value given as JSON null, at any depth),
// on which minidyn would dereference nil, fails with a ValidationException,
// as an attribute value without a type does on DynamoDB, and a Scan or
// Query of an index the table does not have fails with DynamoDB's
// ValidationException for it. A panic while serving a
// request (minidyn's expression interpreter has some on malformed
// expressions, such as a function without its argument) is answered as an
// InternalServerError naming it and saying whether minidyn or the front
// raised it, and releases the front's lock, so that the emulator keeps
// serving.
//
// Requests for operations neither the front nor minidyn implement fail with
// an UnknownOperationException in the DynamoDB JSON error shape (minidyn
// itself answers them with a plain-text body that the SDK cannot decode).
// All other requests and responses pass through unchanged.
func NewHandler(optFns ...func(*Options)) http.Handler {
	return newFront(newEngine(), resolveOptions(optFns))
}

// front is the http.Handler in front of minidyn. All fields below mu are
// guarded by it.
type front struct {
	inner http.Handler // eng, as minidyn's server serves it
	eng   *engine
	opts  Options

	slowPut bool // answer every PutItem through the HTTP handler (tests compare the paths)
	// minidynIndexQuery leaves every Query on an index to minidyn (tests
	// compare the paths).
	minidynIndexQuery bool

	mu     sync.Mutex
	tables map[string]struct{}   // tables that exist, for ListTables
	ttl    map[string]ttlSetting // TTL settings by table
	keys   map[string][]string   // key attribute names by table
	tokens tokenStore
	parts  map[string]*tableParts // index partitions by table, for Query
}

func newFront(eng *engine, opts Options) *front {
	return &front{
		inner:  eng,
		eng:    eng,
		opts:   opts,
		tables: map[string]struct{}{},
		ttl:    map[string]ttlSetting{},
		keys:   map[string][]string{},
		tokens: tokenStore{records: map[string]tokenRecord{}},
		parts:  map[string]*tableParts{},
	}
}

// ServeHTTP implements http.Handler.
func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		// minidyn answers 405; it keeps no state for this.
		f.inner.ServeHTTP(w, r)
		return
	}
	limit := int64(maxRequestBody)
	if r.Header.Get("X-Amz-Target") == bulkLoadTarget {
		limit = maxBulkLoadBody
	}
	body, err := readBody(http.MaxBytesReader(w, r.Body, limit), r.ContentLength, limit)
	if err != nil {
		errorResponse(http.StatusBadRequest, codeSerialization, "localstack: reading request body: "+err.Error()).writeTo(w)
		return
	}
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndexByte(target, '.')+1:]

	// Decoding needs no lock: only the engine's work is serialised.
	var in decoded
	switch op {
	case "PutItem":
		in.put = f.decodePut(body)
	case "TransactWriteItems":
		in.transaction = f.decodeTransaction(body)
	}

	if op != "BulkPutItems" && nullAttributeValue(body) {
		validationError("Supplied AttributeValue is empty, must contain exactly one of the supported datatypes").writeTo(w)
		return
	}
	if p, n, ok := chainedName(body, &in); ok {
		chainedNameError(p, n).writeTo(w)
		return
	}
	if f, p, ok := undefinedValue(body, &in); ok {
		undefinedValueError(f, p).writeTo(w)
		return
	}
	f.locked(r.Context(), op, r.Header, body, &in).writeTo(w)
}

// locked answers a request under f.mu. A panic (minidyn has some on
// malformed requests) releases the lock and is answered as an
// InternalServerError naming it, instead of stopping the emulator or
// leaving it locked for every later request.
func (f *front) locked(ctx context.Context, op string, header http.Header, body []byte, in *decoded) (resp *response) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			who := "the embedded emulator's front"
			if panickedInMinidyn() {
				who = "minidyn, the embedded emulator's engine,"
			}
			resp = errorResponse(http.StatusInternalServerError, "InternalServerError",
				fmt.Sprintf("localstack: %s failed serving %s: %v", who, op, p))
		}
	}()
	if op != "PutItem" && op != "TransactWriteItems" {
		f.eng.sortKeys() // the engine's writes may have set keys aside
	}
	var m *meter
	if !f.opts.DisableConsumedCapacity && !in.noCapacity() {
		m = f.startMeter(op, body)
	}
	in.read = -1
	resp = f.serve(ctx, op, header, body, in)
	f.written(op, body)
	if m != nil {
		m.finish(f, resp, in.read)
	}
	return resp
}

// panickedInMinidyn reports, when called by a deferred function during a
// panic, whether the panic was raised in minidyn's code (the innermost
// frame outside the Go runtime is minidyn's): minidyn's expression
// interpreter, for one, indexes past the arguments of a function called
// with too few ("attribute_exists()").
func panickedInMinidyn() bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		fr, more := frames.Next()
		if !strings.HasPrefix(fr.Function, "runtime.") {
			return strings.HasPrefix(fr.Function, "github.com/truora/minidyn/")
		}
		if !more {
			return false
		}
	}
}

// readBody reads r to its end. A body whose declared size (ContentLength)
// is within limit is read into a buffer of that size, which it then fills
// exactly, instead of the buffers io.ReadAll grows step by step.
func readBody(r io.Reader, size, limit int64) ([]byte, error) {
	if size <= 0 || size > limit {
		return io.ReadAll(r)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	var one [1]byte
	n, err := r.Read(one[:])
	if n == 0 && err == io.EOF {
		return b, nil
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	// More than declared (a reader that does not enforce ContentLength).
	rest, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return append(append(b, one[:n]...), rest...), nil
}

// decoded holds what the front decoded of a request before taking its
// lock; every member may be nil.
type decoded struct {
	put         *server.PutItemInput
	transaction *transactInput
	// read is set by a Scan or Query the front answers itself: the bytes
	// of the items or index entries it read, for consumed capacity (-1:
	// not answered by the front).
	read int
}

// noCapacity reports whether the request is known not to ask for
// ConsumedCapacity.
func (d *decoded) noCapacity() bool {
	var asked ddbtypes.ReturnConsumedCapacity
	switch {
	case d.put != nil:
		asked = d.put.ReturnConsumedCapacity
	case d.transaction != nil && d.transaction.err == nil:
		asked = ddbtypes.ReturnConsumedCapacity(d.transaction.req.ReturnConsumedCapacity)
	default:
		return false
	}
	return asked != ddbtypes.ReturnConsumedCapacityTotal && asked != ddbtypes.ReturnConsumedCapacityIndexes
}

// serve answers one request. The caller holds f.mu.
func (f *front) serve(ctx context.Context, op string, header http.Header, body []byte, in *decoded) *response {
	switch op {
	case "UpdateTimeToLive":
		if !f.opts.DisableTimeToLive {
			return f.updateTimeToLive(ctx, body)
		}
	case "DescribeTimeToLive":
		if !f.opts.DisableTimeToLive {
			return f.describeTimeToLive(ctx, body)
		}
	case "ListTables":
		if !f.opts.DisableListTables {
			return f.listTables(body)
		}
	case "TransactWriteItems":
		return f.transactWriteItems(ctx, header, body, in.transaction)
	case "Scan", "Query":
		return f.search(ctx, op, header, body, in)
	case "BulkPutItems":
		if header.Get("X-Amz-Target") == bulkLoadTarget {
			return f.bulkPut(body)
		}
	}

	if op == "PutItem" && in.put != nil && !f.slowPut && !f.opts.DisablePutReturnValues && !f.opts.DisableReturnOldItem {
		if resp, ok := f.putItem(ctx, in.put); ok {
			return resp
		}
	}
	var put *putReturn
	if op == "PutItem" && !f.opts.DisablePutReturnValues {
		put = f.beforePut(ctx, body)
	}
	resp := call(ctx, f.inner, op, header, body)
	var err error
	switch op {
	case "CreateTable", "DeleteTable", "DescribeTable", "UpdateTable":
		err = f.afterTableOperation(op, body, resp)
	case "PutItem", "UpdateItem", "DeleteItem":
		err = f.afterItemWrite(ctx, body, resp)
		if err == nil && put != nil && resp.ok() {
			err = put.amend(resp)
		}
	}
	if err != nil {
		return errorResponse(http.StatusInternalServerError, "InternalServerError", fmt.Sprintf("localstack: amending the %s response: %v", op, err))
	}
	if unsupported(resp) {
		return errorResponse(http.StatusBadRequest, codeUnknownOperation,
			fmt.Sprintf("localstack: the embedded emulator does not support operation %q", op))
	}
	return resp
}

// unsupported reports whether resp is minidyn's plain-text answer to an
// operation it does not know.
func unsupported(resp *response) bool {
	return resp.status == http.StatusBadRequest &&
		strings.HasPrefix(resp.header.Get("Content-Type"), "text/plain") &&
		strings.TrimSpace(resp.body.String()) == "unsupported operation"
}
