package handler

import (
	"bytes"
	"net/http"

	"github.com/idemkey/idemkey"
)

// capture buffers a handler's response so that it can be committed before
// anything reaches the client.
type capture struct {
	header http.Header
	body   bytes.Buffer
	status int
}

func newCapture() *capture { return &capture{header: make(http.Header)} }

func (c *capture) Header() http.Header { return c.header }

func (c *capture) WriteHeader(status int) {
	if c.status != 0 || status < 100 || status > 999 {
		return
	}
	if status < 200 {
		return // informational responses are not captured
	}
	c.status = status
}

func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	return c.body.Write(p)
}

// Flush is accepted and does nothing: the response is sent after commit.
func (c *capture) Flush() {}

func (c *capture) response() idemkey.Response {
	status := c.status
	if status == 0 {
		status = http.StatusOK
	}
	if c.header.Get("Content-Type") == "" && c.body.Len() > 0 {
		c.header.Set("Content-Type", http.DetectContentType(c.body.Bytes()))
	}
	return idemkey.Response{Status: status, Header: c.header, Body: c.body.Bytes()}
}
