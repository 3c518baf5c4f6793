// Package clientkey holds the rule by which idemkey's clients accept a key
// to send: client.Transport for a key stored with client.WithKey, and the
// grpc package's client interceptor for the key it sets. One rule, so that
// a context's key is refused or sent alike over HTTP and gRPC.
package clientkey

// MaxLength is the longest key a client sends, in bytes; it matches the
// idemkey handler's limit.
const MaxLength = 255

// Check returns why key cannot be sent, or "" when it can. A key can be
// sent when it is 1 to MaxLength bytes long and each of its bytes is
// printable ASCII, 0x20 (the space) to 0x7E. The reasons, checked in this
// order, are "empty key", "key longer than 255 bytes" and "key holds a
// character outside printable ASCII". A reason never holds the key.
func Check(key string) string {
	if key == "" {
		return "empty key"
	}
	if len(key) > MaxLength {
		return "key longer than 255 bytes"
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return "key holds a character outside printable ASCII"
		}
	}
	return ""
}
