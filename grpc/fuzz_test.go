package grpc

import (
	"bytes"
	"testing"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/idemkey/idemkey/grpc/internal/testpb"
	"github.com/idemkey/idemkey/handler"
)

const fuzzMethod = "/idemkey.grpc.test.v1.Ledger/ChargeKeyed"

// validKey reports whether k meets the key's limits: 1 to 255 printable
// ASCII characters.
func validKey(k string) bool {
	if k == "" || len(k) > handler.MaxKeyLength {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// FuzzGRPCKey checks the metadata key parser and the key-from-message
// path: an accepted key meets the limits, a message key is accepted
// exactly when it does, extracting it never changes the caller's message,
// and the fingerprint does not depend on the key.
func FuzzGRPCKey(f *testing.F) {
	f.Add(`"abc"`, "order-1", []byte{})
	f.Add("abc", "", []byte{0x1a, 0x03, 0x0a, 0x01, 0x78})
	f.Add(`"a\"b"`, "a b", []byte{0x0a, 0x01, 0x61, 0x10, 0x05})
	f.Add(",", "\x00", []byte{0x1a, 0x00})
	field, err := resolveKeyField(fuzzMethod, "idempotency_key")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, mdValue, msgKey string, wire []byte) {
		key, found, err := keyOf(metadata.Pairs(KeyMetadata, mdValue), "")
		if err == nil {
			want, perr := handler.ParseKey(mdValue)
			if perr != nil || key != want || !found || !validKey(key) {
				t.Fatalf("metadata %q accepted as %q (ParseKey: %q, %v)", mdValue, key, want, perr)
			}
		}

		var m testpb.KeyedChargeRequest
		if proto.Unmarshal(wire, &m) != nil {
			return
		}
		before, _ := proto.MarshalOptions{Deterministic: true}.Marshal(&m)
		inMsg, stripped := field.extract(&m)
		if inMsg != m.GetIdempotencyKey().GetKey() {
			t.Fatalf("extracted %q, the message holds %q", inMsg, m.GetIdempotencyKey().GetKey())
		}
		after, _ := proto.MarshalOptions{Deterministic: true}.Marshal(&m)
		if !bytes.Equal(before, after) {
			t.Fatal("extract changed the caller's message")
		}
		if stripped.(*testpb.KeyedChargeRequest).GetIdempotencyKey().GetKey() != "" {
			t.Fatal("the fingerprinted message still holds the key")
		}
		got, found, err := keyOf(nil, inMsg)
		switch {
		case inMsg == "" && (found || err != nil):
			t.Fatalf("an empty message key: found %v, %v", found, err)
		case inMsg != "" && (err == nil) != validKey(inMsg):
			t.Fatalf("message key %q: accepted %v", inMsg, err == nil)
		case err == nil && found && got != inMsg:
			t.Fatalf("message key %q came back as %q", inMsg, got)
		}

		// Another key, the same request.
		other := proto.Clone(&m).(*testpb.KeyedChargeRequest)
		if other.IdempotencyKey == nil {
			other.IdempotencyKey = &testpb.IdempotencyKey{}
		}
		other.IdempotencyKey.Key = msgKey
		_, strippedOther := field.extract(other)
		d1, err1 := digest(fuzzMethod, stripped)
		d2, err2 := digest(fuzzMethod, strippedOther)
		if err1 != nil || err2 != nil || !bytes.Equal(d1, d2) {
			t.Fatalf("the fingerprint depends on the key: %x %x (%v, %v)", d1, d2, err1, err2)
		}
	})
}
