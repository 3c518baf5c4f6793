package dynamostore

import (
	"bytes"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/internal/keyschema"
)

// fuzzValue turns a string into an attribute value of the kind chosen by
// two bits of mask, or nothing.
func fuzzValue(mask uint32, shift uint, s string) types.AttributeValue {
	switch (mask >> shift) & 3 {
	case 0:
		return nil
	case 1:
		return &types.AttributeValueMemberS{Value: s}
	case 2:
		return &types.AttributeValueMemberN{Value: s}
	default:
		return &types.AttributeValueMemberB{Value: []byte(s)}
	}
}

// FuzzDecodeRecord feeds decodeRecord arbitrary items: a corrupted or
// foreign item must give an error, never a panic, and a decoded record must
// satisfy the invariants a replay relies on.
func FuzzDecodeRecord(f *testing.F) {
	valid := defaultLayout.encodeCompleted(&Record{
		Scope: "s", Key: "k", Method: "POST", Path: "/p", Fingerprint: bytes.Repeat([]byte{1}, 32),
		State: StateCompleted, LockToken: "t", LockExpires: time.UnixMilli(5), Created: time.UnixMilli(1),
		Completed: time.UnixMilli(2), Expires: time.Unix(3, 0),
		Response: &Response{Status: 201, Header: http.Header{"A": {"b"}}, Body: bytes.Repeat([]byte("x"), 3000)},
	}, 1024, maxItemBytes)
	gz := valid[attrBody].(*types.AttributeValueMemberB).Value
	f.Add(uint32(0xFFFFFFFF), "1:sk", "2", string(bytes.Repeat([]byte{1}, 16)), "c", "5", "201", string(gz), "gzip", "\x00\x01A\x01b", "\x01")
	f.Add(uint32(0x5A5A5A5A), "0:k", "2", "", "p", "x", "99", "", "br", "", "")
	f.Fuzz(func(t *testing.T, mask uint32, pk, v, fp, state, num, status, body, enc, hname, hval string) {
		item := map[string]types.AttributeValue{}
		set := func(name string, av types.AttributeValue) {
			if av != nil {
				item[name] = av
			}
		}
		set(PartitionKey, fuzzValue(mask, 0, pk))
		set(attrVersion, fuzzValue(mask, 2, v))
		set(attrMethod, fuzzValue(mask, 4, "POST"))
		set(attrPath, fuzzValue(mask, 4, "/p"))
		set(attrFP, fuzzValue(mask, 6, fp))
		set(attrState, fuzzValue(mask, 8, state))
		set(attrLock, fuzzValue(mask, 10, "tok"))
		set(attrLockExp, fuzzValue(mask, 12, num))
		set(attrCreated, fuzzValue(mask, 12, num))
		set(TTLAttribute, fuzzValue(mask, 14, num))
		set(attrDone, fuzzValue(mask, 16, num))
		set(attrStatus, fuzzValue(mask, 18, status))
		set(attrBody, fuzzValue(mask, 20, body))
		set(attrEnc, fuzzValue(mask, 22, enc))
		set(attrOmitted, fuzzValue(mask, 24, num))
		if (mask>>26)&1 == 1 {
			// A header block: hname and hval are its bytes.
			set(attrHeader, fuzzValue(mask, 28, hname+hval))
		}
		rec, err := defaultLayout.decode(item)
		if err != nil {
			if _, ok := err.(*RecordError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if len(rec.Fingerprint) != StoredFingerprintSize || rec.Key == "" {
			t.Fatalf("decoded an invalid record: %+v", rec)
		}
		switch rec.State {
		case StateInProgress:
		case StateCompleted:
			if rec.Response == nil || rec.Response.Status < 100 || rec.Response.Status > 999 {
				t.Fatalf("completed record without a valid response: %+v", rec)
			}
		default:
			t.Fatalf("decoded unknown state %q", rec.State)
		}
	})
}

func TestCompletedRecordRoundTrips(t *testing.T) {
	in := &Record{
		Scope: "tenant:1", Key: "k:2", Method: "POST", Path: "/p", Fingerprint: bytes.Repeat([]byte{7}, 32),
		State: StateCompleted, LockToken: "tok", LockExpires: time.UnixMilli(1_000_500), Created: time.UnixMilli(1_000_000),
		Completed: time.UnixMilli(1_000_100), Expires: time.Unix(2_000, 0), Region: "eu-west-1",
		Response: &Response{Status: 201, Header: http.Header{"Location": {"/p/1"}, "Vary": {"a", "b"}}, Body: bytes.Repeat([]byte("ab"), 4000)},
	}
	item := defaultLayout.encodeCompleted(in, DefaultCompressAbove, maxItemBytes)
	if _, ok := item[attrEnc]; !ok {
		t.Fatal("a compressible 8 KB body was not compressed")
	}
	out, err := defaultLayout.decode(item)
	if err != nil {
		t.Fatal(err)
	}
	if out.Scope != in.Scope || out.Key != in.Key || out.LockToken != in.LockToken || !out.Expires.Equal(in.Expires) ||
		!out.Created.Equal(in.Created) || !out.Completed.Equal(in.Completed) || out.Region != in.Region ||
		!bytes.Equal(out.Response.Body, in.Response.Body) || out.Response.Header.Get("Location") != "/p/1" ||
		len(out.Response.Header["Vary"]) != 2 {
		t.Fatalf("round trip changed the record:\n in: %+v\nout: %+v", in, out)
	}
}

// The header block keeps every stored header as it was: common lines and
// others, several values of one name in their order, empty and non-UTF-8
// values, names as given; and leaves out the headers that are not stored.
func TestHeaderBlockRoundTrips(t *testing.T) {
	in := http.Header{
		"Content-Type":           {"application/json"},
		"X-Content-Type-Options": {"nosniff"},
		"Vary":                   {"b", "a", "Content-Type: application/json"},
		"Cache-Control":          {"no-store", "private"},
		"X-Empty":                {""},
		"X-Bytes":                {"\xff\x00\x01"},
		"x-lower":                {strings.Repeat("v", 300)},
	}
	stored := in.Clone()
	in["Set-Cookie"] = []string{"s=1"}
	in["Date"] = []string{"now"}
	in["X-None"] = []string{}
	block := encodeHeader(in)
	out, err := decodeHeader(block.(*types.AttributeValueMemberB).Value)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(stored, out) {
		t.Fatalf("round trip changed the headers:\n in: %q\nout: %q", stored, out)
	}
	if b := encodeHeader(http.Header{"Content-Type": {"application/json"}}).(*types.AttributeValueMemberB).Value; !bytes.Equal(b, []byte{1}) {
		t.Fatalf("a JSON response's header block is %q, want one byte", b)
	}
	if encodeHeader(http.Header{"Date": {"now"}}) != nil || encodeHeader(nil) != nil {
		t.Fatal("a block of no stored header was written")
	}
	for _, bad := range [][]byte{{0}, {0, 5, 'a'}, {0, 1, 'a', 2, 'b'}, {200}, {0, 0x80}, {}} {
		if _, err := decodeHeader(bad); err == nil {
			t.Errorf("decodeHeader(%q) accepted", bad)
		}
	}
}

func TestSplitPartitionKeyInvertsPartitionKey(t *testing.T) {
	for _, c := range [][2]string{{"", "k"}, {"a", "bc"}, {"ab", "c"}, {"1:x", "2:y"}, {"long scope with : colons", "key"}} {
		scope, key, ok := keyschema.Split(keyschema.PartitionKey(c[0], c[1]))
		if !ok || scope != c[0] || key != c[1] {
			t.Errorf("split(keyschema.PartitionKey(%q, %q)) = %q, %q, %v", c[0], c[1], scope, key, ok)
		}
	}
	for _, bad := range []string{"", ":k", "x:k", "5:ab", "01:ak", "-1:k"} {
		if _, _, ok := keyschema.Split(bad); ok {
			t.Errorf("split(%q) accepted", bad)
		}
	}
}
