package client_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemkey/idemkey/client"
)

func TestNewTransportRefusesMethodsThatMatchNoRequest(t *testing.T) {
	assert.PanicsWithValue(t, `client: Options.Methods: "post" has lower-case letters, and methods are case-sensitive: it matches no POST request; `+
		`write "POST" (the net/http constants, such as http.MethodPost, spell them)`, func() {
		client.NewTransport(nil, func(o *client.Options) { o.Methods = []string{"post"} })
	})
	assert.Panics(t, func() { client.New(nil, func(o *client.Options) { o.Methods = []string{""} }) })
	assert.NotPanics(t, func() { client.NewTransport(nil, func(o *client.Options) { o.Methods = []string{http.MethodPut} }) })
}
