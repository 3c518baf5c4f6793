package handler_test

import (
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
)

func TestNewRefusesGuardedMethodsThatMatchNoRequest(t *testing.T) {
	store := dynamostore.New(dynamodb.New(dynamodb.Options{Region: "us-east-1"}), "never-called")
	for method, want := range map[string]string{
		"post":  `handler: Options.Methods: "post" has lower-case letters, and methods are case-sensitive: it matches no POST request; write "POST"`,
		"Patch": `"Patch" has lower-case letters`,
		"":      "the empty method matches no request",
		"PO ST": `"PO ST" is not an HTTP method`,
	} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				assert.Contains(t, msg, want, "%q", method)
			}()
			handler.New(store, func(o *handler.Options) { o.SingleCaller, o.Methods = true, []string{http.MethodPost, method} })
			t.Errorf("%q: accepted", method)
		}()
	}
	for _, method := range []string{http.MethodPost, http.MethodPut, "PURGE", "M-SEARCH"} {
		assert.NotPanics(t, func() {
			handler.New(store, func(o *handler.Options) { o.SingleCaller, o.Methods = true, []string{method} })
		}, method)
	}
}
