// Harness "client": the body of a function that returns an error.
package main

import (
	"net/http"
	"strings"

	"github.com/idemkey/idemkey/client"
)

func send() error {
	// README block
	return nil
}

func main() { _ = send() }

var (
	_ = client.New
	_ = http.DefaultClient
	_ = strings.NewReader
)
