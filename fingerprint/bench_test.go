package fingerprint_test

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/idemkey/idemkey/fingerprint"
)

// genBody returns a deterministic API-style JSON body of about size bytes:
// records whose members are not in canonical order, with nested objects,
// arrays, escapes, non-ASCII text and the number forms APIs use.
func genBody(size int) []byte {
	r := rand.New(rand.NewPCG(uint64(size), 99))
	var sb strings.Builder
	sb.WriteString(`{"requestId":"7f1c0a52-5d1e-4b8e-9a59-3cbbd3e0f1aa","items":[`)
	for i := 0; sb.Len() < size-200; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"sku":"SKU-%06d","name":"Article n\u00b0%d \"deluxe\" – caf\u00e9 ☕","quantity":%d,`+
			`"unitPrice":%d.%02d,"discount":0.%d,"tags":["t%d","t%d","sale"],"active":%t,`+
			`"shipping":{"weightKg":%d.5,"dims":[%d,%d,%d],"carrier":"DHL","express":null},`+
			`"note":"line1\nline2\tend","createdAt":"2024-05-%02dT12:00:00Z","ratio":%de-3}`,
			r.IntN(1_000_000), i, 1+r.IntN(20), r.IntN(500), r.IntN(100), 1+r.IntN(9),
			r.IntN(50), r.IntN(50), r.IntN(2) == 0, r.IntN(40), r.IntN(100), r.IntN(100), r.IntN(100),
			1+r.IntN(28), r.IntN(10_000))
	}
	sb.WriteString(`],"customer":{"id":12345,"email":"a@example.com","vip":false},"currency":"EUR"}`)
	return []byte(sb.String())
}

// sortedMembers returns an object with n members already in canonical order.
func sortedMembers(n int) []byte {
	var sb strings.Builder
	sb.WriteByte('{')
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"k%07d":%d`, i, i)
	}
	sb.WriteByte('}')
	return []byte(sb.String())
}

// reversedMembers returns an object with n members in descending order.
func reversedMembers(n int) []byte {
	var sb strings.Builder
	sb.WriteByte('{')
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"k%07d":%d`, n-1-i, i)
	}
	sb.WriteByte('}')
	return []byte(sb.String())
}

// nestedUnsorted returns MaxDepth nested objects, each listing a 1 KiB
// member before the member that holds the next level, so every level must be
// reordered around everything nested in it.
func nestedUnsorted() []byte {
	d := fingerprint.MaxDepth
	level := `{"z":"` + strings.Repeat("x", 1024) + `","a":`
	return []byte(strings.Repeat(level, d) + "0" + strings.Repeat("}", d))
}

type benchBody struct {
	name string
	body []byte
}

var benchBodies = sync.OnceValue(func() []benchBody {
	return []benchBody{
		{"1KiB", genBody(1 << 10)},
		{"64KiB", genBody(64 << 10)},
		{"1MiB", genBody(1 << 20)},
		{"sorted-10000", sortedMembers(10_000)},
		{"sorted-100000", sortedMembers(100_000)},
		{"reversed-100000", reversedMembers(100_000)},
		{"nested-unsorted-1000", nestedUnsorted()},
	}
})

// BenchmarkCanonical measures AppendCanonical into a reused buffer.
func BenchmarkCanonical(b *testing.B) {
	for _, bb := range benchBodies() {
		b.Run(bb.name, func(b *testing.B) {
			buf := make([]byte, 0, 2*len(bb.body))
			b.SetBytes(int64(len(bb.body)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = fingerprint.AppendCanonical(buf[:0], bb.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkJSONDigest measures canonicalisation plus SHA-256: JSON.
func BenchmarkJSONDigest(b *testing.B) {
	for _, bb := range benchBodies() {
		b.Run(bb.name, func(b *testing.B) {
			b.SetBytes(int64(len(bb.body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := fingerprint.JSON(bb.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkJCSReference is the baseline for BenchmarkJSONDigest: RFC 8785
// canonicalisation with github.com/gowebpki/jcs, then SHA-256.
func BenchmarkJCSReference(b *testing.B) {
	for _, bb := range benchBodies() {
		b.Run(bb.name, func(b *testing.B) {
			b.SetBytes(int64(len(bb.body)))
			b.ReportAllocs()
			for b.Loop() {
				out, err := jcs.Transform(bb.body)
				if err != nil {
					b.Fatal(err)
				}
				_ = sha256.Sum256(out)
			}
		})
	}
}

// BenchmarkRequestDigestJSON measures Request.Digest with a JSON body.
func BenchmarkRequestDigestJSON(b *testing.B) {
	body := genBody(64 << 10)
	r := fingerprint.Request{Method: "POST", Path: "/v1/orders", Query: "dry_run=false&a=1", Body: body}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Digest()
	}
}

// nonJSONBody is 64 KiB of random binary data, such as a file upload.
var nonJSONBody = sync.OnceValue(func() []byte {
	r := rand.New(rand.NewPCG(5, 6))
	body := make([]byte, 64<<10)
	for i := range body {
		body[i] = byte(r.Uint32())
	}
	body[0] = 0x89 // as in a PNG file: never the start of JSON text
	return body
})

// BenchmarkDigestRaw measures Request.Digest with a 64 KiB body that is not
// JSON; compare with BenchmarkSHA256.
func BenchmarkDigestRaw(b *testing.B) {
	r := fingerprint.Request{Method: "POST", Path: "/v1/uploads", Body: nonJSONBody()}
	b.SetBytes(int64(len(r.Body)))
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Digest()
	}
}

// BenchmarkSHA256 is the baseline for BenchmarkDigestRaw: SHA-256 of the
// same body.
func BenchmarkSHA256(b *testing.B) {
	body := nonJSONBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		_ = sha256.Sum256(body)
	}
}
