package handler

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/internal/httpcapture"
)

// A captured response carries its trailers in its header map, under keys
// that no header can have (a header name holds no ':'): the Trailer header
// the handler declared under declaredTrailersKey, each trailer's values
// under http.TrailerPrefix followed by its name.
const declaredTrailersKey = http.TrailerPrefix

// capture buffers a handler's response so that it can be committed before
// anything reaches the client. It records what net/http's HTTP/1.1 server
// would have sent (see package httpcapture).
type capture struct{ *httpcapture.Writer }

func newCapture() *capture { return &capture{httpcapture.New()} }

// response returns what the handler sent, once it has returned: the header
// snapshot with the Content-Type net/http would have sniffed, the body, and
// the trailers net/http would have sent, encoded in the header map.
func (c *capture) response() idemkey.Response {
	r := c.Result()
	out := make(http.Header, len(r.Header)+len(r.Trailer))
	for name, values := range r.Header {
		if name == "Trailer" {
			out[declaredTrailersKey] = values
		} else {
			out[name] = values
		}
	}
	for name, values := range r.Trailer {
		if len(values) > 0 {
			out[http.TrailerPrefix+name] = values
		}
	}
	return idemkey.Response{Status: r.Status, Header: out, Body: r.Body}
}

// sendResponse sends a captured or stored response resp to w, so that the
// client receives what the guarded handler sent: the headers, the status,
// the body and the trailers. Content-Type is never sniffed again: a
// response without one had none. extra headers are added to the header.
func sendResponse(w http.ResponseWriter, resp idemkey.Response, extra func(http.Header)) {
	h := w.Header()
	var declared map[string]bool
	trailers := make(http.Header)
	for name, values := range resp.Header {
		switch n, isTrailer := strings.CutPrefix(name, http.TrailerPrefix); {
		case name == declaredTrailersKey:
			h["Trailer"] = append([]string(nil), values...)
			for _, v := range values {
				httpcapture.ForEachHeaderElement(v, func(name string) {
					if declared == nil {
						declared = make(map[string]bool)
					}
					declared[http.CanonicalHeaderKey(name)] = true
				})
			}
		case isTrailer:
			trailers[n] = append([]string(nil), values...)
		default:
			h[name] = append([]string(nil), values...)
		}
	}
	if _, ok := h["Content-Type"]; !ok {
		h["Content-Type"] = nil // sniffing suppressed: the capture decided
	}
	if extra != nil {
		extra(h)
	}
	// The framing is net/http's to choose for this body.
	h.Del("Transfer-Encoding")
	if len(trailers) == 0 {
		h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	} else {
		h.Del("Content-Length")
		// Undeclared trailers are announced by their key before the
		// header is written, so that net/http sends the body chunked and
		// the trailers after it.
		for name, values := range trailers {
			if !declared[name] {
				h[http.TrailerPrefix+name] = values
			}
		}
	}
	w.WriteHeader(resp.Status)
	for name, values := range trailers {
		if declared[name] {
			h[name] = values // the header is written: this is the trailer
		}
	}
	_, _ = w.Write(resp.Body)
}
