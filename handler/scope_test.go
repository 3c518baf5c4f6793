package handler_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
)

// offlineStore is a store whose client is never called: New's checks
// happen before any request.
func offlineStore() *dynamostore.Store {
	return dynamostore.New(dynamodb.New(dynamodb.Options{Region: "us-east-1"}), "keys")
}

// recoverPanic returns the value f panics with, or nil.
func recoverPanic(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// Forgetting the scope would put every caller in one scope, where one
// tenant's stored response is replayed to another that uses the same key:
// New refuses it and says what to set.
func TestNewWithoutScopeIsRefused(t *testing.T) {
	store := offlineStore()
	v := recoverPanic(func() { handler.New(store) })
	require.NotNil(t, v, "New without a scope must panic")
	msg, _ := v.(string)
	assert.Contains(t, msg, "Options.Scope")
	assert.Contains(t, msg, "Options.SingleCaller")

	v = recoverPanic(func() {
		handler.New(store, func(o *handler.Options) { o.Optional = true })
	})
	assert.NotNil(t, v, "other options do not stand in for a scope")
}

// A guarded method is stored in the key record, which bounds it.
func TestGuardedMethodLongerThanTheRecordBoundIsRefused(t *testing.T) {
	store := offlineStore()
	scope := func(*http.Request) (string, error) { return "t", nil }
	v := recoverPanic(func() {
		handler.New(store, func(o *handler.Options) {
			o.Scope = scope
			o.Methods = []string{http.MethodPost, strings.Repeat("M", 33)}
		})
	})
	assert.NotNil(t, v, "a 33-byte guarded method must be refused")
	assert.Nil(t, recoverPanic(func() {
		handler.New(store, func(o *handler.Options) {
			o.Scope = scope
			o.Methods = []string{strings.Repeat("M", 32)}
		})
	}), "a 32-byte guarded method is accepted")
}
