package grpc

import (
	"crypto/sha256"
	"encoding/binary"

	"google.golang.org/protobuf/proto"
)

// fingerprintDomain separates gRPC fingerprints from every other digest of
// the module (the HTTP request's, the JSON one): a key used for an HTTP
// request and then for a gRPC call is a key reused for another request.
const fingerprintDomain = "idemkey/fingerprint/v1/grpc"

// digest is SHA-256 over the length-prefixed domain, full method name,
// message full name and deterministic binary form of m.
func digest(fullMethod string, m proto.Message) ([]byte, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	for _, f := range [][]byte{[]byte(fingerprintDomain), []byte(fullMethod),
		[]byte(m.ProtoReflect().Descriptor().FullName()), b} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write(f)
	}
	return h.Sum(nil), nil
}
