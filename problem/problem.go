// Package problem writes RFC 9457 problem documents
// (application/problem+json), the shape in which every idemkey front door
// reports an error. A service's own handlers can answer in the same shape,
// so that its clients parse one kind of error document:
//
//	problem.Write(w, problem.Details{
//		Type:   "https://example.com/problems/invalid-amount",
//		Title:  "Invalid amount",
//		Status: http.StatusBadRequest,
//		Detail: "amount must be a positive number of cents",
//	})
//
// The public surface is Details, Write and ContentType.
package problem

import (
	"encoding/json"
	"net/http"
)

// ContentType is the media type of a problem document.
const ContentType = "application/problem+json"

// Details is an RFC 9457 problem document.
type Details struct {
	// Type is a URI that names the kind of problem. Empty is sent as
	// "about:blank" (RFC 9457, section 4.2.1).
	Type string `json:"type"`
	// Title is a short summary of the kind of problem, the same for
	// every occurrence.
	Title string `json:"title"`
	// Status is the HTTP status code. Write sends 500 in its place when
	// it is not a client or server error (400 to 599).
	Status int `json:"status"`
	// Detail explains this occurrence to the client.
	Detail string `json:"detail,omitempty"`
	// Instance is a URI that identifies this occurrence, if any.
	Instance string `json:"instance,omitempty"`
}

// Body returns the document's JSON encoding, with the same substitutions
// Write makes.
func (d Details) Body() []byte {
	d = d.normalised()
	b, _ := json.Marshal(d) // cannot fail: strings and an int
	return b
}

func (d Details) normalised() Details {
	if d.Type == "" {
		d.Type = "about:blank"
	}
	if d.Status < 400 || d.Status > 599 {
		d.Status = http.StatusInternalServerError
	}
	return d
}

// Write sends d as the response: its status, Content-Type
// application/problem+json, Cache-Control no-store and the JSON document.
// Headers already set on w (a Retry-After, for example) are sent too.
func Write(w http.ResponseWriter, d Details) {
	d = d.normalised()
	h := w.Header()
	h.Set("Content-Type", ContentType)
	h.Set("Cache-Control", "no-store")
	h.Del("Content-Length")
	w.WriteHeader(d.Status)
	_, _ = w.Write(d.Body())
}
