// Package paymentsapi is the payments API of idemkey's example: POST
// /payments is guarded by idemkey and writes each payment in the same
// DynamoDB transaction as its key record. The example server, its Lambda
// build and the reliability tests all serve this one API.
//
// Errors are RFC 9457 problem documents (package problem). Those of
// idemkey's protocol (a key reused, a request in flight) carry idemkey's
// type URIs; the API's own errors carry the type URIs under ProblemBase:
//
//	unauthorized       401  no "Authorization: Bearer <token>"
//	invalid-payment    400  the body is not a valid payment
//	not-found          404  no payment with this id for this caller
//	not-processed      503  the request ended before the payment was processed (Retry-After)
//	store-unavailable  503  DynamoDB could not be read or written (Retry-After)
//	not-guarded        500  a create that reached the API without idemkey's transaction
package paymentsapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/problem"
	"github.com/idemkey/idemkey/txn"
)

// Payment is the resource this API creates.
type Payment struct {
	ID          string `json:"id"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	Description string `json:"description,omitempty"`
}

// List is the answer to GET /payments: the caller's payments, oldest
// first.
type List struct {
	Payments []Payment `json:"payments"`
	Count    int       `json:"count"`
}

// ProblemBase prefixes the type URI of each problem the API reports itself
// (the package doc lists them); a problem's name follows it.
const ProblemBase = "https://example.com/payments/problems/"

// fail answers with the API's own problem document of the given name.
func fail(w http.ResponseWriter, status int, name, title, detail string) {
	problem.Write(w, problem.Details{Type: ProblemBase + name, Title: title, Status: status, Detail: detail})
}

// newID returns a payment id that sorts by creation time: the millisecond
// of t, then 80 random bits, so that listing a caller's payments in key
// order lists them oldest first.
func newID(t time.Time) string {
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()))
	stamp := base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString(ms[2:])
	return "pay_" + strings.ToLower(stamp+rand.Text()[:16])
}

// Config is the API's configuration.
type Config struct {
	KeyTable, PaymentTable string
	Retention, Lease       time.Duration
	Latency                time.Duration
	// Unguarded serves POST /payments without idemkey, writing each payment
	// with a plain PutItem. For load tests that measure idemkey's cost;
	// never for real use: a retry pays twice.
	Unguarded bool
	// LeaseFromRequest, when set, gives each request's claim its own lease
	// (handler.Options.Lease): a Lambda deployment ties it to the
	// invocation's deadline with handler.LeaseFromDeadline.
	LeaseFromRequest func(*http.Request) time.Duration
	// SingleTable keeps the key records in PaymentTable, next to the
	// payments, under SingleTableSchema; KeyTable is then unused. Each
	// payment and its key record are written by one transaction on one
	// table.
	SingleTable bool
	// Region, when set, is written on every key record
	// (dynamostore.Options.Region), so that a sweeper of that region
	// (dynamostore.SweepOptions.Region, the template's WriterRegion)
	// evicts them: such a sweeper leaves a record of no region alone.
	Region string
	// ExpiryIndex says that the key table has the expiry index and is
	// swept by it (dynamostore.Options.ExpiryIndex, the template's
	// SweepMode index): the key records then carry what the index needs.
	ExpiryIndex bool
	// Bodies, when set, keeps the bodies of large responses out of the
	// key records (dynamostore.Options.Bodies, the template's
	// LargeResponseBodies).
	Bodies dynamostore.BodyStore
	// BodyBucket and BodyKMSKey name the bucket and the SSE-KMS key of
	// Bodies, for a caller that builds it from a configuration (the
	// Lambda's BODY_BUCKET and BODY_KMS_KEY); New does not read them.
	BodyBucket, BodyKMSKey string
	// Observer, when set, receives the Event of every guarded request
	// next to the default log records (handler.LogObserver): an
	// OpenTelemetry adapter, or Lambda's per-invocation metrics line.
	Observer idemkey.Observer
}

// SingleTableSchema is where key records live in the payments table with
// Config.SingleTable: the table's own key attributes (owner, id), every
// key record under the partition key prefix "idemkey#" with the sort key
// "idemkey", and TTL on "expires_at", which payments never carry. An
// owner is a hex hash (OwnerOf), so no payment's partition key begins
// with "idemkey#": payments and key records are disjoint, and a caller's
// GET /payments (a Query on its owner) never meets a key record.
var SingleTableSchema = dynamostore.KeySchema{
	PartitionKey: "owner", SortKey: "id", SortKeyValue: "idemkey", Prefix: "idemkey", TTLAttribute: "expires_at",
}

// keyTable returns the table and key schema of the key records.
func (c Config) keyTable() (string, dynamostore.KeySchema) {
	if c.SingleTable {
		return c.PaymentTable, SingleTableSchema
	}
	return c.KeyTable, dynamostore.KeySchema{}
}

// PaymentsClient is what the app calls directly: reads, and the write of
// the unguarded mode. A guarded write goes through the staged transaction.
type PaymentsClient interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

type app struct {
	cfg    Config
	client Client
}

// Client is the DynamoDB client the API needs.
type Client interface {
	dynamostore.Client
	PaymentsClient
}

// NewHandler returns the payments API, guarded by idemkey.
func NewHandler(client Client, cfg Config) http.Handler {
	a := &app{cfg: cfg, client: client}
	table, schema := cfg.keyTable()
	store := dynamostore.New(client, table, func(o *dynamostore.Options) {
		o.Retention = cfg.Retention
		o.Lease = cfg.Lease
		o.Schema = schema
		o.Region = cfg.Region
		o.ExpiryIndex = cfg.ExpiryIndex
		o.Bodies = cfg.Bodies
	})
	idem := handler.New(store, func(o *handler.Options) {
		// The scope is the authenticated caller (authenticate runs first),
		// never a value the client picks.
		o.Scope = func(r *http.Request) (string, error) {
			if owner := ownerFrom(r.Context()); owner != "" {
				return owner, nil
			}
			return "", errors.New("the request is not authenticated")
		}
		o.Lease = cfg.LeaseFromRequest
		if cfg.Observer != nil {
			o.Guard.Observer = idemkey.Observers(handler.LogObserver(nil), cfg.Observer)
		}
	})
	mux := http.NewServeMux()
	if cfg.Unguarded {
		mux.HandleFunc("POST /payments", a.create)
	} else {
		mux.Handle("POST /payments", idem(http.HandlerFunc(a.create)))
	}
	mux.HandleFunc("GET /payments/{id}", a.get)
	mux.HandleFunc("GET /payments", a.list)
	return authenticate(mux)
}

type ownerKey struct{}

func ownerFrom(ctx context.Context) string { s, _ := ctx.Value(ownerKey{}).(string); return s }

// OwnerOf returns the owner (and idempotency scope) of a bearer token: a
// hash, so that neither the key table nor the payments table holds tokens.
func OwnerOf(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:16])
}

// authenticate requires "Authorization: Bearer <token>". The token is the
// caller's identity; the app keeps only a hash of it, as the owner of its
// payments and as the idempotency scope.
func authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		token, ok := strings.CutPrefix(auth, "Bearer ")
		token = strings.TrimSpace(token)
		if !ok || token == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="payments"`)
			fail(w, http.StatusUnauthorized, "unauthorized", "Unauthorized", "Send Authorization: Bearer <token>.")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ownerKey{}, OwnerOf(token))))
	})
}

// create validates the body and stages the payment on the request's
// transaction; idemkey commits it together with the key record.
func (a *app) create(w http.ResponseWriter, r *http.Request) {
	p, err := decodePayment(r)
	if err != nil {
		fail(w, http.StatusBadRequest, "invalid-payment", "Invalid payment", err.Error())
		return
	}
	if a.cfg.Latency > 0 {
		select {
		case <-time.After(a.cfg.Latency):
		case <-r.Context().Done():
			// Cut off (deadline, hang-up): answer 503, which is not stored,
			// so the key is released and a retry executes. An empty 200
			// here would be stored and replayed as the payment's answer.
			w.Header().Set("Retry-After", "1")
			fail(w, http.StatusServiceUnavailable, "not-processed", "Payment not processed",
				"The request ended before the payment was processed; nothing was charged. Retry with the same key.")
			return
		}
	}
	p, put := NewPayment(p, ownerFrom(r.Context()), a.cfg.PaymentTable, time.Now())
	if a.cfg.Unguarded {
		_, err := a.client.PutItem(r.Context(), &dynamodb.PutItemInput{TableName: put.TableName, Item: put.Item, ConditionExpression: put.ConditionExpression})
		if err != nil {
			w.Header().Set("Retry-After", "1")
			fail(w, http.StatusServiceUnavailable, "store-unavailable", "Store unavailable", "The payment was not saved.")
			return
		}
	} else {
		tx, ok := txn.FromContext(r.Context())
		if !ok {
			fail(w, http.StatusInternalServerError, "not-guarded", "Payment not created",
				"The API is misconfigured: payments must be created through idemkey.")
			return
		}
		tx.Put(put)
	}
	w.Header().Set("Location", "/payments/"+p.ID)
	writeJSON(w, http.StatusCreated, p)
}

func decodePayment(r *http.Request) (Payment, error) {
	var in struct {
		Amount      json.RawMessage `json:"amount"`
		Currency    *string         `json:"currency"`
		Description *string         `json:"description"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return Payment{}, errors.New("the body must be a JSON object with amount, currency and an optional description: " + err.Error())
	}
	if dec.More() {
		return Payment{}, errors.New("the body must hold exactly one JSON object")
	}
	var p Payment
	if in.Amount == nil {
		return p, errors.New("amount is required")
	}
	digits := string(in.Amount)
	amount, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || amount <= 0 || strconv.FormatInt(amount, 10) != digits {
		return p, errors.New("amount must be a positive integer in minor units")
	}
	p.Amount = amount
	if in.Currency == nil || len(*in.Currency) != 3 || strings.ToUpper(*in.Currency) != *in.Currency ||
		strings.IndexFunc(*in.Currency, func(c rune) bool { return c < 'A' || c > 'Z' }) >= 0 {
		return p, errors.New("currency must be three upper-case letters (ISO 4217)")
	}
	p.Currency = *in.Currency
	if in.Description != nil {
		if utf8.RuneCountInString(*in.Description) > 500 {
			return p, errors.New("description must be at most 500 characters")
		}
		p.Description = *in.Description
	}
	return p, nil
}

func (a *app) get(w http.ResponseWriter, r *http.Request) {
	out, err := a.client.GetItem(r.Context(), &dynamodb.GetItemInput{
		TableName: aws.String(a.cfg.PaymentTable),
		Key: map[string]types.AttributeValue{
			"owner": &types.AttributeValueMemberS{Value: ownerFrom(r.Context())},
			"id":    &types.AttributeValueMemberS{Value: r.PathValue("id")},
		},
	})
	if err != nil {
		w.Header().Set("Retry-After", "1")
		fail(w, http.StatusServiceUnavailable, "store-unavailable", "Store unavailable", "Payments cannot be read right now.")
		return
	}
	if out.Item == nil {
		fail(w, http.StatusNotFound, "not-found", "Payment not found", "No payment with this id exists for this caller.")
		return
	}
	writeJSON(w, http.StatusOK, paymentOf(out.Item))
}

func (a *app) list(w http.ResponseWriter, r *http.Request) {
	payments, err := ListPayments(r.Context(), a.client, a.cfg.PaymentTable, ownerFrom(r.Context()))
	if err != nil {
		w.Header().Set("Retry-After", "1")
		fail(w, http.StatusServiceUnavailable, "store-unavailable", "Store unavailable", "Payments cannot be read right now.")
		return
	}
	writeJSON(w, http.StatusOK, List{Payments: payments, Count: len(payments)})
}

// NewPayment gives p a new id, ordered by its creation time now, and
// returns it with the Put that stores it for owner in table, conditional
// on the id being new: the write a create stages on its txn.Tx (the HTTP
// API and the gRPC example both).
func NewPayment(p Payment, owner, table string, now time.Time) (Payment, types.Put) {
	p.ID = newID(now)
	item := map[string]types.AttributeValue{
		"owner":    &types.AttributeValueMemberS{Value: owner},
		"id":       &types.AttributeValueMemberS{Value: p.ID},
		"amount":   &types.AttributeValueMemberN{Value: strconv.FormatInt(p.Amount, 10)},
		"currency": &types.AttributeValueMemberS{Value: p.Currency},
	}
	if p.Description != "" {
		item["description"] = &types.AttributeValueMemberS{Value: p.Description}
	}
	return p, types.Put{
		TableName:           aws.String(table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(id)"),
	}
}

// ListPayments returns owner's payments in table, oldest first (ids sort
// by creation time), every page of the Query read. It never returns nil
// without an error.
func ListPayments(ctx context.Context, client PaymentsClient, table, owner string) ([]Payment, error) {
	payments := []Payment{}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		KeyConditionExpression:    aws.String("#o = :o"),
		ExpressionAttributeNames:  map[string]string{"#o": "owner"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":o": &types.AttributeValueMemberS{Value: owner}},
	}
	for {
		out, err := client.Query(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, item := range out.Items {
			payments = append(payments, paymentOf(item))
		}
		if len(out.LastEvaluatedKey) == 0 {
			return payments, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func paymentOf(item map[string]types.AttributeValue) Payment {
	var p Payment
	if v, ok := item["id"].(*types.AttributeValueMemberS); ok {
		p.ID = v.Value
	}
	if v, ok := item["amount"].(*types.AttributeValueMemberN); ok {
		p.Amount, _ = strconv.ParseInt(v.Value, 10, 64)
	}
	if v, ok := item["currency"].(*types.AttributeValueMemberS); ok {
		p.Currency = v.Value
	}
	if v, ok := item["description"].(*types.AttributeValueMemberS); ok {
		p.Description = v.Value
	}
	return p
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// EnsureTables creates the key table and the payments table if missing.
// With SingleTable it only makes the payments table ready for payments and
// key records (dynamostore.EnsureSchemaTable with SingleTableSchema): it
// creates it with TTL on "expires_at" if missing, and checks an existing
// one.
func EnsureTables(ctx context.Context, client dynamostore.TableClient, cfg Config) error {
	if cfg.SingleTable {
		return dynamostore.EnsureSchemaTable(ctx, client, cfg.PaymentTable, SingleTableSchema, 0)
	}
	if err := dynamostore.EnsureTable(ctx, client, cfg.KeyTable, 0); err != nil {
		return err
	}
	_, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(cfg.PaymentTable)})
	var notFound *types.ResourceNotFoundException
	if !errors.As(err, &notFound) {
		return err
	}
	_, err = client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(cfg.PaymentTable),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("owner"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("owner"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("id"), KeyType: types.KeyTypeRange},
		},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return err
	}
	return dynamodb.NewTableExistsWaiter(client).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(cfg.PaymentTable)}, 2*time.Minute)
}
