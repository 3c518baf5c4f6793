package fingerprint_test

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
		{"reversed-10000", reversedMembers(10_000)},
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
	r := fingerprint.Request{Method: "POST", Path: "/v1/orders", Query: "dry_run=false&a=1", ContentType: "application/json", Body: body}
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

// interleave runs a and c alternately, timing each call, and reports the
// median time of c over the median time of a as the metric unit. Running
// the two side by side, call by call, cancels the drift of a shared machine,
// which separate benchmarks run seconds apart do not, and medians ignore the
// calls that happen to be descheduled. ns/op is the median time of a.
//
// Where the thread's CPU time can be read, the same ratio of CPU times is
// reported as unit+"_cpu". It does not count the time the thread waits for a
// processor, which on a busy machine inflates the wall-clock time of long
// calls more than that of short ones; nor the work of background garbage
// collection, which only the allocating side (jcs) causes.
func interleave(b *testing.B, unit string, a, c func()) {
	b.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a()
	c()
	var ta, tc, ca, cc []time.Duration
	_, cpuOK := threadCPU()
	for b.Loop() {
		u0, _ := threadCPU()
		t0 := time.Now()
		a()
		t1 := time.Now()
		u1, _ := threadCPU()
		c()
		t2 := time.Now()
		u2, _ := threadCPU()
		ta, tc = append(ta, t1.Sub(t0)), append(tc, t2.Sub(t1))
		ca, cc = append(ca, u1-u0), append(cc, u2-u1)
	}
	b.ReportMetric(float64(median(ta).Nanoseconds()), "ns/op")
	b.ReportMetric(float64(median(tc))/float64(median(ta)), unit)
	if cpuOK && median(ca) > 0 {
		b.ReportMetric(float64(median(cc))/float64(median(ca)), unit+"_cpu")
	}
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func bodyNamed(name string) []byte {
	for _, bb := range benchBodies() {
		if bb.name == name {
			return bb.body
		}
	}
	panic("no benchmark body " + name)
}

// BenchmarkJSONDigestVsJCS reports how many times faster JSON is than the
// RFC 8785 reference, github.com/gowebpki/jcs followed by SHA-256, on the
// 64 KiB body, the two measured in alternation (metric x_vs_jcs).
func BenchmarkJSONDigestVsJCS(b *testing.B) {
	body := bodyNamed("64KiB")
	b.SetBytes(int64(len(body)))
	interleave(b, "x_vs_jcs",
		func() {
			if _, err := fingerprint.JSON(body); err != nil {
				b.Fatal(err)
			}
		},
		func() {
			out, err := jcs.Transform(body)
			if err != nil {
				b.Fatal(err)
			}
			_ = sha256.Sum256(out)
		})
}

// BenchmarkJSONDigestScaling reports the time for an object of 100,000
// members relative to one of 10,000 (metric x_time_for_10x_members), already
// sorted and in reverse order, the two sizes measured in alternation.
// Linear time gives 10. Garbage collection caused by one size may run during
// calls of the other, so the ratio does not show allocation costs: compare
// BenchmarkJSONDigest/sorted-10000 with sorted-100000 for those, and see
// B/op here; TestWorkPerMemberIsBounded checks them exactly.
func BenchmarkJSONDigestScaling(b *testing.B) {
	for _, order := range []string{"sorted", "reversed"} {
		b.Run(order, func(b *testing.B) {
			small, large := bodyNamed(order+"-10000"), bodyNamed(order+"-100000")
			interleave(b, "x_time_for_10x_members",
				func() {
					if _, err := fingerprint.JSON(small); err != nil {
						b.Fatal(err)
					}
				},
				func() {
					if _, err := fingerprint.JSON(large); err != nil {
						b.Fatal(err)
					}
				})
		})
	}
}

// BenchmarkDigestRawVsSHA256 reports the speed of Request.Digest on a
// 64 KiB body that is not JSON relative to SHA-256 alone (metric
// speed_vs_sha256; 1 is as fast), the two measured in alternation.
func BenchmarkDigestRawVsSHA256(b *testing.B) {
	r := fingerprint.Request{Method: "POST", Path: "/v1/uploads", Body: nonJSONBody()}
	b.SetBytes(int64(len(r.Body)))
	interleave(b, "speed_vs_sha256",
		func() { _ = r.Digest() },
		func() { _ = sha256.Sum256(r.Body) })
}
