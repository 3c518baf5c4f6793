package ddbtest

import (
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// LostAnswers is an aws.HTTPClient for the SDK that sends every request
// with its next client and, for the first requests of one operation,
// discards DynamoDB's answer and returns a 500 InternalServerError in its
// place: the request was applied, but the client never learns it, and the
// SDK sends it again. It is safe for concurrent use.
type LostAnswers struct {
	next aws.HTTPClient
	op   string

	mu         sync.Mutex
	left, lost int
}

// NewLostAnswers returns a client that loses the answers of the first n
// requests of op (as the SDK names it: "DeleteItem") sent through it.
func NewLostAnswers(next aws.HTTPClient, op string, n int) *LostAnswers {
	return &LostAnswers{next: next, op: op, left: n}
}

// Lost returns how many answers were lost so far.
func (l *LostAnswers) Lost() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// Do sends req, and loses its answer if it is one of those to lose.
func (l *LostAnswers) Do(req *http.Request) (*http.Response, error) {
	lose := false
	if strings.HasSuffix(req.Header.Get("X-Amz-Target"), "."+l.op) {
		l.mu.Lock()
		if l.left > 0 {
			l.left--
			lose = true
		}
		l.mu.Unlock()
	}
	resp, err := l.next.Do(req)
	if !lose || err != nil {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	l.mu.Lock()
	l.lost++
	l.mu.Unlock()
	return synthetic(req, http.StatusInternalServerError, "com.amazonaws.dynamodb.v20120810#InternalServerError", "Internal server error (injected after the request was applied)"), nil
}
