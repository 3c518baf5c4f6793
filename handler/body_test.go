package handler_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
	"github.com/idemkey/idemkey/internal/problem/problemtest"
)

// bodyRefusingMiddleware guards a handler that must not run with a store
// whose client is never reached: every request it serves is refused while
// its body is read, before the claim.
func bodyRefusingMiddleware(t *testing.T, maxBodyBytes int64) http.Handler {
	t.Helper()
	store := dynamostore.New(dynamodb.New(dynamodb.Options{Region: "us-east-1"}), "never-called")
	mw := handler.New(store, func(o *handler.Options) {
		o.SingleCaller = true
		o.MaxBodyBytes = maxBodyBytes
	})
	return mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("handler ran") }))
}

// serveBody serves one POST whose body is body and whose declared
// Content-Length is declared (-1: unknown).
func serveBody(h http.Handler, declared int64, body io.Reader) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/payments", body)
	req.Header.Set(handler.HeaderName, "k1")
	req.ContentLength = declared
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func assertRecordedProblem(t *testing.T, rec *httptest.ResponseRecorder, status int, kind string) {
	t.Helper()
	problemtest.Check(t, rec.Code, rec.Header(), rec.Body.String(), status, kind)
}

// hiddenLength hides a reader's length, so a request over it has an unknown
// Content-Length.
type hiddenLength struct{ io.Reader }

func TestBodyNotMatchingItsContentLengthGets400AndOverTheLimit413(t *testing.T) {
	h := bodyRefusingMiddleware(t, 100)
	t.Run("shorter than declared", func(t *testing.T) {
		assertRecordedProblem(t, serveBody(h, 10, strings.NewReader("x")), http.StatusBadRequest, "invalid-body")
	})
	t.Run("declared but empty", func(t *testing.T) {
		assertRecordedProblem(t, serveBody(h, 10, hiddenLength{strings.NewReader("")}), http.StatusBadRequest, "invalid-body")
	})
	t.Run("longer than declared", func(t *testing.T) {
		assertRecordedProblem(t, serveBody(h, 1, strings.NewReader("xy")), http.StatusBadRequest, "invalid-body")
	})
	t.Run("declared above the limit", func(t *testing.T) {
		assertRecordedProblem(t, serveBody(h, 101, strings.NewReader("x")), http.StatusRequestEntityTooLarge, "body-too-large")
	})
	t.Run("unknown length above the limit", func(t *testing.T) {
		body := hiddenLength{strings.NewReader(strings.Repeat("x", 101))}
		assertRecordedProblem(t, serveBody(h, -1, body), http.StatusRequestEntityTooLarge, "body-too-large")
	})
}

// A declared Content-Length is the client's claim: with a limit high
// enough to admit it, a huge declared length with a one-byte body is a
// short body (400), as with a small declared length, never a panic.
func TestHugeDeclaredContentLengthWithShortBodyGets400(t *testing.T) {
	h := bodyRefusingMiddleware(t, 1<<62)
	for _, declared := range []int64{2, 1 << 50} {
		var rec *httptest.ResponseRecorder
		require.NotPanics(t, func() { rec = serveBody(h, declared, strings.NewReader("x")) }, "declared %d", declared)
		assertRecordedProblem(t, rec, http.StatusBadRequest, "invalid-body")
	}
}

// Memory is spent on the bytes that arrive, not on the declared length: a
// one-byte body declaring 64 MiB costs well under 1 MiB of allocation.
func TestShortBodyIsNotAllocatedAtItsDeclaredLength(t *testing.T) {
	const declared = 64 << 20
	h := bodyRefusingMiddleware(t, declared)
	least := uint64(math.MaxUint64)
	for range 3 { // the least of three runs: other goroutines may allocate meanwhile
		req := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader("x"))
		req.Header.Set(handler.HeaderName, "k1")
		req.ContentLength = declared
		rec := httptest.NewRecorder()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		h.ServeHTTP(rec, req)
		runtime.ReadMemStats(&after)
		assertRecordedProblem(t, rec, http.StatusBadRequest, "invalid-body")
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	assert.Less(t, least, uint64(1<<20), "a 1-byte body declaring %d bytes allocated %d bytes", declared, least)
}

// Bodies longer than the first read buffer are read whole, whether their
// length is declared or not, and the handler sees exactly their bytes.
func TestLargeBodyIsReadWhole(t *testing.T) {
	h := newHarness(t, func(o *handler.Options) { o.MaxBodyBytes = 1 << 20 })
	h.setInner(func(w http.ResponseWriter, r *http.Request) {
		h.executed.Add(1)
		b, _ := io.ReadAll(r.Body)
		sum := sha256.Sum256(b)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, hex.EncodeToString(sum[:]))
	})
	for _, c := range []struct {
		name string
		size int
		hide bool
	}{
		{"declared just above the first buffer", 64<<10 + 1, false},
		{"declared several times the first buffer", 300 << 10, false},
		{"declared at the limit", 1 << 20, false},
		{"unknown length", 300 << 10, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := randomBytes(t, c.size)
			var r io.Reader = bytes.NewReader(body)
			if c.hide {
				r = hiddenLength{r}
			}
			req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/payments", r)
			require.NoError(t, err)
			req.Header.Set("X-Tenant", "t1")
			req.Header.Set("Content-Type", "application/octet-stream")
			req.Header.Set(handler.HeaderName, "large-"+strings.ReplaceAll(c.name, " ", "-"))
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, resp.StatusCode, "%s", got)
			sum := sha256.Sum256(body)
			assert.Equal(t, hex.EncodeToString(sum[:]), string(got), "the handler saw other bytes")
		})
	}
}

// With MaxBodyBytes at math.MaxInt64 (New accepts it: "no limit"), a body
// of unknown length is read whole, not taken for an empty one.
func TestMaxInt64BodyLimitReadsABodyOfUnknownLength(t *testing.T) {
	h := newHarness(t, func(o *handler.Options) { o.MaxBodyBytes = math.MaxInt64 })
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/payments", hiddenLength{strings.NewReader(`{"amount":1}`)})
	require.NoError(t, err)
	req.Header.Set("X-Tenant", "t1")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(handler.HeaderName, "unbounded-1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%s", got)
	assert.Contains(t, string(got), `"echo":"{\"amount\":1}"`, "the handler saw another body")
}
