package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/http"
	"strconv"
	"strings"
)

const (
	// targetPrefix is the X-Amz-Target prefix of DynamoDB API version 2012-08-10.
	targetPrefix = "DynamoDB_20120810."
	// jsonContentType is the content type of DynamoDB JSON 1.0 bodies.
	jsonContentType = "application/x-amz-json-1.0"
	// errorNamespace prefixes the __type of errors the front writes, as real
	// DynamoDB does.
	errorNamespace = "com.amazonaws.dynamodb.v20120810#"
)

// Error codes the front produces or inspects.
const (
	codeValidation            = "ValidationException"
	codeResourceNotFound      = "ResourceNotFoundException"
	codeConditionalCheck      = "ConditionalCheckFailedException"
	codeTransactionCanceled   = "TransactionCanceledException"
	codeIdempotentMismatch    = "IdempotentParameterMismatchException"
	codeSerialization         = "SerializationException"
	codeUnknownOperation      = "UnknownOperationException"
	reasonConditionalCheck    = "ConditionalCheckFailed"
	returnAllOld              = "ALL_OLD"
	selectCount               = "COUNT"
	unknownOperationNamespace = "com.amazon.coral.service#"
)

// response is a complete HTTP response held in memory. It is the
// http.ResponseWriter the front hands to minidyn, so that the front can
// inspect and amend what minidyn answered before anything reaches the client.
type response struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newResponse() *response { return &response{header: http.Header{}} }

// Header implements http.ResponseWriter.
func (r *response) Header() http.Header { return r.header }

// WriteHeader implements http.ResponseWriter; only the first call counts.
func (r *response) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

// Write implements http.ResponseWriter.
func (r *response) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}

// ok reports whether the response is a success.
func (r *response) ok() bool { return r.status == http.StatusOK }

// setJSON replaces the body with v encoded as JSON.
func (r *response) setJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	r.body.Reset()
	r.body.Write(b)
	return nil
}

// writeTo sends the response to w. Content-Length is recomputed because the
// front may have rewritten the body.
func (r *response) writeTo(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range r.header {
		h[k] = v
	}
	h.Del("Content-Length")
	h.Set("Content-Length", fmt.Sprint(r.body.Len()))
	// DynamoDB signs every response body with its CRC32; the SDK checks it.
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(r.body.Bytes())), 10))
	status := r.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(r.body.Bytes())
}

// jsonResponse returns a 200 response whose body is v encoded as JSON.
func jsonResponse(v any) *response {
	r := newResponse()
	r.header.Set("Content-Type", jsonContentType)
	r.status = http.StatusOK
	if err := r.setJSON(v); err != nil {
		return errorResponse(http.StatusInternalServerError, "InternalServerError", err.Error())
	}
	return r
}

// errorResponse returns an error in the DynamoDB JSON error shape, which the
// SDK decodes into the typed error named by code.
func errorResponse(status int, code, message string) *response {
	r := newResponse()
	r.header.Set("Content-Type", jsonContentType)
	r.header.Set("X-Amzn-Errortype", code)
	r.status = status
	ns := errorNamespace
	if code == codeUnknownOperation {
		ns = unknownOperationNamespace
	}
	_ = r.setJSON(struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{ns + code, message})
	return r
}

// validationError returns a ValidationException.
func validationError(format string, args ...any) *response {
	return errorResponse(http.StatusBadRequest, codeValidation, fmt.Sprintf(format, args...))
}

// errorCode returns the error code of a DynamoDB JSON error response (the
// part of __type after '#'), or "" when r is not such an error.
func (r *response) errorCode() string {
	if r.ok() {
		return ""
	}
	var body struct {
		Type string `json:"__type"`
	}
	if json.Unmarshal(r.body.Bytes(), &body) != nil {
		return ""
	}
	return body.Type[strings.LastIndexByte(body.Type, '#')+1:]
}

// object decodes a JSON object body into its members, leaving each member
// undecoded so that the object can be re-encoded with only some members
// changed.
type object map[string]json.RawMessage

func decodeObject(b []byte) (object, error) {
	var o object
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, err
	}
	if o == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return o, nil
}

// has reports whether member k is present and not null or empty.
func (o object) has(k string) bool {
	v, ok := o[k]
	if !ok {
		return false
	}
	switch strings.TrimSpace(string(v)) {
	case "", "null", "{}", "[]":
		return false
	}
	return true
}

// set encodes v as member k.
func (o object) set(k string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	o[k] = b
	return nil
}

// call sends one request to the wrapped handler and returns its complete
// response. header may be nil; the target header is always set to op.
func call(ctx context.Context, h http.Handler, op string, header http.Header, body []byte) *response {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/", bytes.NewReader(body))
	if err != nil {
		return errorResponse(http.StatusInternalServerError, "InternalServerError", err.Error())
	}
	if header != nil {
		req.Header = header.Clone()
	}
	req.Header.Set("X-Amz-Target", targetPrefix+op)
	req.Header.Set("Content-Type", jsonContentType)
	req.ContentLength = int64(len(body))
	resp := newResponse()
	h.ServeHTTP(resp, req)
	if resp.status == 0 {
		resp.status = http.StatusOK
	}
	return resp
}

// callJSON is call with the request body given as a value to encode.
func callJSON(ctx context.Context, h http.Handler, op string, in any) *response {
	b, err := json.Marshal(in)
	if err != nil {
		return errorResponse(http.StatusInternalServerError, "InternalServerError", err.Error())
	}
	return call(ctx, h, op, nil, b)
}
