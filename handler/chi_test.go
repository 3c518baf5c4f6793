package handler_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/assert"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/handler"
)

func TestMiddlewareWorksInAChiRouter(t *testing.T) {
	h := newHarness(t)
	r := chi.NewRouter()
	r.Use(handler.New(dynamostore.New(h.ep.Client, h.keys), func(o *handler.Options) {
		o.Scope = func(*http.Request) (string, error) { return "chi", nil }
	}))
	r.Post("/items/{id}", func(w http.ResponseWriter, r *http.Request) {
		h.executed.Add(1)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(chi.URLParam(r, "id")))
	})
	r.Get("/items/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	srv := httptest.NewServer(r)
	defer srv.Close()

	send := func(method string) *http.Response {
		req, _ := http.NewRequest(method, srv.URL+"/items/42", strings.NewReader(`{}`))
		req.Header.Set(handler.HeaderName, "chi-key")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	assert.Equal(t, 201, send("POST").StatusCode)
	again := send("POST")
	assert.Equal(t, 201, again.StatusCode)
	assert.Equal(t, "true", again.Header.Get(handler.ReplayedHeader))
	assert.Equal(t, 200, send("GET").StatusCode)
	assert.Equal(t, int64(1), h.executed.Load())
}
