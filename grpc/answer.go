package grpc

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/grpc/internal/storedpb"
)

// answerContentType marks a stored response as a gRPC answer: it is the
// Content-Type of every response this package stores, and a stored
// response without it is not decoded as one.
const answerContentType = "application/vnd.idemkey.grpc-answer+proto"

// Status values of a stored gRPC answer: statusMessage for a response
// message, statusCodeBase plus the code for a final status, beyond any
// HTTP status, so that an operator reading a record tells it apart.
const (
	statusMessage  = 200
	statusCodeBase = 600
)

// errNotAnswer: a stored response that is not a gRPC answer of this
// package, or one that does not decode.
var errNotAnswer = errors.New("grpc: the stored response is not a gRPC answer")

// errAnswerOmitted: the call completed, but its answer was too large to
// store (over DynamoDB's item limit even compressed).
var errAnswerOmitted = errors.New("grpc: the stored answer was too large to keep")

// reservedMetadata reports whether a metadata key is managed by gRPC or by
// this package and is therefore neither stored nor replayed: pseudo-headers,
// "grpc-" keys, content-type, the connection-level HTTP/2 headers, and
// ReplayedMetadata, which a replay sets itself.
func reservedMetadata(key string) bool {
	switch key = strings.ToLower(key); {
	case strings.HasPrefix(key, ":"), strings.HasPrefix(key, "grpc-"):
		return true
	}
	switch key {
	case "content-type", "te", "connection", "keep-alive", "transfer-encoding", "upgrade",
		"proxy-connection", "user-agent", "date", ReplayedMetadata:
		return true
	}
	return false
}

// capture is the ServerTransportStream a guarded handler sees: it keeps
// the header and trailer metadata the handler sets, for the interceptor to
// send after the commit. Nothing reaches the client before then.
type capture struct {
	method string
	mu     sync.Mutex
	header metadata.MD
	sent   bool
	trail  metadata.MD
}

func (c *capture) Method() string { return c.method }

func (c *capture) SetHeader(md metadata.MD) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sent {
		return status.Error(codes.Internal, "grpc: SetHeader called after SendHeader")
	}
	c.header = metadata.Join(c.header, md)
	return nil
}

// SendHeader records md as SetHeader does; the header leaves with the
// response, after the commit.
func (c *capture) SendHeader(md metadata.MD) error {
	if err := c.SetHeader(md); err != nil {
		return err
	}
	c.mu.Lock()
	c.sent = true
	c.mu.Unlock()
	return nil
}

func (c *capture) SetTrailer(md metadata.MD) error {
	c.mu.Lock()
	c.trail = metadata.Join(c.trail, md)
	c.mu.Unlock()
	return nil
}

func (c *capture) metadata() (header, trailer metadata.MD) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.header.Copy(), c.trail.Copy()
}

// forward sends header and trailer on the call's real stream, when it has
// one.
func forward(stream grpc.ServerTransportStream, header, trailer metadata.MD) {
	if stream == nil {
		return
	}
	if len(header) > 0 {
		_ = stream.SetHeader(header)
	}
	if len(trailer) > 0 {
		_ = stream.SetTrailer(trailer)
	}
}

// encodeAnswer stores the outcome of a handler: its response message when
// err is nil, its status otherwise, with the metadata it set (reserved
// keys left out). A handler error that is not a status error is stored as
// codes.Unknown, as gRPC sends it.
func encodeAnswer(resp any, herr error, header, trailer metadata.MD) (idemkey.Response, error) {
	a := &storedpb.Answer{Header: encodeMD(header), Trailer: encodeMD(trailer)}
	code := codes.OK
	if herr != nil {
		st := status.Convert(herr)
		code = st.Code()
		if code == codes.OK {
			// A status error with code OK: gRPC sends it as Unknown.
			code, st = codes.Unknown, status.New(codes.Unknown, st.Message())
		}
		b, err := proto.Marshal(st.Proto())
		if err != nil {
			return idemkey.Response{}, err
		}
		a.Status = b
	} else {
		m, ok := resp.(proto.Message)
		if !ok || m == nil {
			return idemkey.Response{}, errors.New("grpc: the handler's response is not a protocol buffer message")
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			return idemkey.Response{}, err
		}
		a.MessageType, a.Message = string(m.ProtoReflect().Descriptor().FullName()), b
	}
	body, err := proto.Marshal(a)
	if err != nil {
		return idemkey.Response{}, err
	}
	st := statusMessage
	if code != codes.OK {
		st = statusCodeBase + int(code)
	}
	return idemkey.Response{Status: st, Header: http.Header{"Content-Type": {answerContentType}}, Body: body}, nil
}

// codeOf returns the gRPC code of a stored response, and false for one
// that is not a gRPC answer.
func codeOf(r idemkey.Response) (codes.Code, bool) {
	if r.Header.Get("Content-Type") != answerContentType {
		return 0, false
	}
	switch c := r.Status - statusCodeBase; {
	case r.Status == statusMessage:
		return codes.OK, true
	case c > 0 && c <= int(codes.Unauthenticated):
		return codes.Code(c), true
	}
	return 0, false
}

// decodedAnswer is a stored answer, ready to send.
type decodedAnswer struct {
	resp    proto.Message // nil when err is set
	err     error         // the stored status
	header  metadata.MD
	trailer metadata.MD
}

// decodeAnswer turns a stored response back into what the handler
// answered. It fails with errNotAnswer for anything encodeAnswer did not
// write, and for a message type the process does not know.
func decodeAnswer(r idemkey.Response) (*decodedAnswer, error) {
	code, ok := codeOf(r)
	switch {
	case !ok:
		return nil, errNotAnswer
	case r.BodyOmitted > 0:
		return nil, errAnswerOmitted
	}
	var a storedpb.Answer
	if err := proto.Unmarshal(r.Body, &a); err != nil {
		return nil, errNotAnswer
	}
	d := &decodedAnswer{header: decodeMD(a.Header), trailer: decodeMD(a.Trailer)}
	if code != codes.OK {
		var s spb.Status
		if err := proto.Unmarshal(a.Status, &s); err != nil || codes.Code(s.Code) != code {
			return nil, errNotAnswer
		}
		d.err = status.ErrorProto(&s)
		return d, nil
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(a.MessageType))
	if err != nil {
		return nil, errNotAnswer
	}
	m := mt.New().Interface()
	if err := proto.Unmarshal(a.Message, m); err != nil {
		return nil, errNotAnswer
	}
	d.resp = m
	return d, nil
}

// encodeMD lists md's unreserved keys, sorted, each with its values in order.
func encodeMD(md metadata.MD) []*storedpb.Metadata {
	keys := make([]string, 0, len(md))
	for k := range md {
		if !reservedMetadata(k) && len(md[k]) > 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := make([]*storedpb.Metadata, len(keys))
	for i, k := range keys {
		e := &storedpb.Metadata{Key: k}
		for _, v := range md[k] {
			e.Values = append(e.Values, []byte(v))
		}
		out[i] = e
	}
	return out
}

func decodeMD(entries []*storedpb.Metadata) metadata.MD {
	md := metadata.MD{}
	for _, e := range entries {
		if reservedMetadata(e.Key) {
			continue
		}
		for _, v := range e.Values {
			md.Append(e.Key, string(v))
		}
	}
	return md
}
