package localstack

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// handlerClient is an aws.HTTPClient that answers every request with an
// http.Handler called in the caller's goroutine: the SDK's requests reach
// the embedded emulator without a socket, a connection pool or a server
// goroutine. The response is complete when Do returns. The handler shares
// the caller's request header and URL and must not change them (the
// emulator only reads them).
type handlerClient struct {
	h http.Handler
}

// Do serves req with the handler, in the calling goroutine. The handler
// reads the request's body as a server would, and Do closes it
// afterwards; the response carries the status and the headers the handler
// had set when it wrote its status, and the bytes it wrote. When req's
// context has already ended, Do returns its error and serves nothing.
func (c handlerClient) Do(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	// A shallow copy, as a transport reads the request without changing
	// it: the emulator reads the headers and never writes them.
	in := req.WithContext(req.Context())
	if in.Body == nil {
		in.Body = http.NoBody
	}
	in.RequestURI = req.URL.RequestURI()
	if in.Host == "" {
		in.Host = req.URL.Host
	}
	in.RemoteAddr = "127.0.0.1:0" // the client is this process
	w := &bufferedResponse{header: http.Header{}}
	err := serve(c.h, w, in)
	if req.Body != nil {
		_ = req.Body.Close()
	}
	if err != nil {
		return nil, err
	}
	w.WriteHeader(http.StatusOK) // a handler that wrote nothing answered 200
	resp := &http.Response{
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sent,
		Body:          io.NopCloser(bytes.NewReader(w.body.Bytes())),
		ContentLength: int64(w.body.Len()),
		Request:       req,
	}
	return resp, nil
}

// serve calls h. A panic in h is returned as an error, as a server ends
// the connection of a handler that panics instead of stopping.
func serve(h http.Handler, w http.ResponseWriter, r *http.Request) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("localstack: the embedded emulator failed serving %s: %v", r.Header.Get("X-Amz-Target"), p)
		}
	}()
	h.ServeHTTP(w, r)
	return nil
}

// bufferedResponse is the http.ResponseWriter of handlerClient: it keeps
// the status, the headers as they were when the status was written, and
// the body.
type bufferedResponse struct {
	header http.Header
	sent   http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferedResponse) Header() http.Header { return w.header }

func (w *bufferedResponse) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	w.sent = w.header.Clone()
}

func (w *bufferedResponse) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}
