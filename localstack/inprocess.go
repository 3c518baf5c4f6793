package localstack

import (
	"fmt"
	"net/http"
	"net/http/httptest"
)

// handlerClient is an aws.HTTPClient that serves every request with an
// http.Handler in the caller's goroutine: no socket, no server goroutine.
type handlerClient struct {
	h http.Handler
}

// Do serves req with the handler and closes its body. The response has the
// headers as they were when the status was written. A request whose
// context has ended is not served.
func (c handlerClient) Do(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	in := req
	if req.Body == nil {
		in = req.Clone(req.Context())
		in.Body = http.NoBody
	}
	err := serve(c.h, rec, in) // the emulator only reads the request
	_ = in.Body.Close()
	if err != nil {
		return nil, err
	}
	resp := rec.Result()
	resp.ContentLength = int64(rec.Body.Len())
	resp.Request = req
	return resp, nil
}

// serve calls h and returns its panic as an error, as a server ends the
// connection of a handler that panics.
func serve(h http.Handler, w http.ResponseWriter, r *http.Request) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("localstack: the embedded emulator failed serving %s: %v", r.Header.Get("X-Amz-Target"), p)
		}
	}()
	h.ServeHTTP(w, r)
	return nil
}
