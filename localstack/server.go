package localstack

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/truora/minidyn/interpreter/language"
)

// maxRequestBody is more than any DynamoDB request, with room for a bulk
// load.
const maxRequestBody = 1 << 30

const targetPrefix = "DynamoDB_20120810."

// NewHandler returns a new embedded emulator, with no tables, as an
// http.Handler speaking DynamoDB's JSON 1.0 protocol (POST, X-Amz-Target).
// Of optFns only Options.Now is used.
//
// It answers CreateTable, DescribeTable, UpdateTable (a global secondary
// index it adds is filled at once), DeleteTable, ListTables,
// UpdateTimeToLive, DescribeTimeToLive, PutItem, GetItem, UpdateItem,
// DeleteItem, Query, Scan (with parallel segments), BatchWriteItem and
// TransactWriteItems (with ClientRequestToken), with condition, update,
// filter and projection expressions, ReturnValues,
// ReturnValuesOnConditionCheckFailure and ReturnConsumedCapacity (an
// estimate by DynamoDB's documented rules). Requests are served one at a
// time. Any other operation is an UnknownOperationException. Expired items
// are never deleted: DynamoDB deletes them lazily, so code must treat an
// item whose TTL attribute lies in the past as absent anyway.
func NewHandler(optFns ...func(*Options)) http.Handler {
	o := resolveOptions(optFns)
	return &emulator{now: o.Now, tables: map[string]*table{}, tokens: map[string]tokenRecord{},
		parsed: map[string]*language.ConditionalExpression{}}
}

// emulator is the embedded DynamoDB emulator. mu guards everything below.
type emulator struct {
	now func() time.Time

	mu         sync.Mutex
	tables     map[string]*table
	tokens     map[string]tokenRecord                     // successful transactions by ClientRequestToken
	tokenOrder []string                                   // the tokens, oldest first
	parsed     map[string]*language.ConditionalExpression // by expression
}

type apiError struct {
	status  int
	code    string
	message string
	item    item     // ConditionalCheckFailedException's Item
	reasons []reason // TransactionCanceledException's CancellationReasons
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

type reason struct {
	Code    string
	Message string `json:",omitempty"`
	Item    item   `json:",omitempty"`
}

func validation(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "ValidationException", message: fmt.Sprintf(format, args...)}
}

func notFound(what string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "ResourceNotFoundException", message: "Requested resource not found" + what}
}

var operations = map[string]func(*emulator, []byte) (any, error){
	"CreateTable":        (*emulator).createTable,
	"DescribeTable":      (*emulator).describeTable,
	"UpdateTable":        (*emulator).updateTable,
	"DeleteTable":        (*emulator).deleteTable,
	"ListTables":         (*emulator).listTables,
	"UpdateTimeToLive":   (*emulator).updateTimeToLive,
	"DescribeTimeToLive": (*emulator).describeTimeToLive,
	"PutItem":            (*emulator).putItem,
	"GetItem":            (*emulator).getItem,
	"UpdateItem":         (*emulator).updateItem,
	"DeleteItem":         (*emulator).deleteItem,
	"Query":              (*emulator).query,
	"Scan":               (*emulator).scan,
	"BatchWriteItem":     (*emulator).batchWriteItem,
	"TransactWriteItems": (*emulator).transactWriteItems,
}

func (e *emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	target := r.Header.Get("X-Amz-Target")
	var serve func(*emulator, []byte) (any, error)
	switch op, ok := strings.CutPrefix(target, targetPrefix); {
	case target == bulkLoadTarget:
		serve = (*emulator).bulkPut
	case ok:
		serve = operations[op]
	}
	if serve == nil {
		writeError(w, &apiError{status: http.StatusBadRequest, code: "UnknownOperationException",
			message: fmt.Sprintf("localstack: the embedded emulator does not support operation %q", target)})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		writeError(w, &apiError{status: http.StatusBadRequest, code: "SerializationException", message: "localstack: reading the request body: " + err.Error()})
		return
	}
	out, err := e.locked(serve, body)
	if err != nil {
		writeError(w, err)
		return
	}
	b, err := json.Marshal(out)
	if err != nil {
		writeError(w, err)
		return
	}
	writeBody(w, http.StatusOK, b)
}

// writeBody writes a response with the CRC32 header the SDK checks.
func writeBody(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(b)), 10))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// locked serves one request under e.mu; a panic is an InternalServerError.
func (e *emulator) locked(serve func(*emulator, []byte) (any, error), body []byte) (out any, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, &apiError{status: http.StatusInternalServerError, code: "InternalServerError", message: fmt.Sprintf("localstack: the embedded emulator failed: %v", p)}
		}
	}()
	return serve(e, body)
}

func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{status: http.StatusInternalServerError, code: "InternalServerError", message: err.Error()}
	}
	body := map[string]any{"__type": "com.amazonaws.dynamodb.v20120810#" + ae.code, "message": ae.message}
	if ae.item != nil {
		body["Item"] = ae.item
	}
	if ae.reasons != nil {
		body["CancellationReasons"] = ae.reasons
	}
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(body)
	writeBody(w, ae.status, b.Bytes())
}

func decode(body []byte, in any) error {
	if err := json.Unmarshal(body, in); err != nil {
		return &apiError{status: http.StatusBadRequest, code: "SerializationException", message: err.Error()}
	}
	return nil
}

func (e *emulator) table(name string) (*table, error) {
	if name == "" {
		return nil, validation("1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member must not be null")
	}
	t := e.tables[name]
	if t == nil {
		return nil, notFound(": Table: " + name + " not found")
	}
	return t, nil
}
