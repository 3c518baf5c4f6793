package fingerprint_test

import (
	"errors"
	"fmt"

	"github.com/idemkey/idemkey/fingerprint"
)

func ExampleCanonical() {
	out, err := fingerprint.Canonical([]byte(`{
		"name": "caf\u00e9",
		"amount": 1.50,
		"big": 1E30,
		"tags": ["b", "a"],
		"\uff01": false,
		"\ud83d\ude00": true
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	// U+1F600 sorts before U+FF01: its first UTF-16 code unit is 0xD83D.
	fmt.Println(string(out))
	// Output: {"amount":1.5,"big":1e+30,"name":"café","tags":["b","a"],"😀":true,"！":false}
}

func ExampleCanonical_numbers() {
	for _, n := range []string{"1.0", "10e-1", "-0", "9007199254740993", "1e400", "0.0000001"} {
		out, _ := fingerprint.Canonical([]byte(n))
		fmt.Printf("%s -> %s\n", n, out)
	}
	// Output:
	// 1.0 -> 1
	// 10e-1 -> 1
	// -0 -> 0
	// 9007199254740993 -> 9007199254740993
	// 1e400 -> 1e+400
	// 0.0000001 -> 1e-7
}

func ExampleCanonical_errors() {
	_, err := fingerprint.Canonical([]byte(`{"id": 1, "id": 2}`))
	var se *fingerprint.SyntaxError
	if errors.As(err, &se) {
		fmt.Println("offset:", se.Offset)
	}
	fmt.Println("duplicate:", errors.Is(err, fingerprint.ErrDuplicateName))
	fmt.Println(err)
	// Output:
	// offset: 10
	// duplicate: true
	// fingerprint: duplicate object member name at offset 10
}

func ExampleAppendCanonical() {
	buf := []byte("canonical: ")
	buf, err := fingerprint.AppendCanonical(buf, []byte(`[ {"b": 2, "a": 1}, "\u0041\/" ]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(buf))
	// Output: canonical: [{"a":1,"b":2},"A/"]
}

func ExampleRequest_Digest() {
	first := fingerprint.Request{
		Method: "POST",
		Path:   "/v1/payments",
		Query:  "currency=EUR&dry_run=false",
		// The body is compared as JSON because the media type says so.
		ContentType: "application/json",
		Body:        []byte(`{"amount": 100, "to": "acct_1"}`),
	}
	// A retry whose client re-serialised the body and reordered the query.
	retry := fingerprint.Request{
		Method:      "POST",
		Path:        "/v1/payments",
		Query:       "dry_run=false&currency=EUR",
		ContentType: "application/json; charset=utf-8",
		Body:        []byte(`{"to":"acct_1","amount":1.00e2}`),
	}
	// The same key reused for a different payment.
	other := retry
	other.Body = []byte(`{"to":"acct_1","amount":1000}`)

	fmt.Println(first.Digest() == retry.Digest())
	fmt.Println(first.Digest() == other.Digest())
	// Output:
	// true
	// false
}

func ExampleJSON() {
	a, _ := fingerprint.JSON([]byte(`{"detail": {"orderId": 42}, "source": "shop"}`))
	b, _ := fingerprint.JSON([]byte(`{"source":"shop","detail":{"orderId":42.0}}`))
	fmt.Println(a == b)
	// Output: true
}

func ExampleEqual() {
	stored := []byte("5f0c8a8a") // e.g. read from the idempotency record
	computed := []byte("5f0c8a8a")
	fmt.Println(fingerprint.Equal(stored, computed))
	// Output: true
}

func ExampleDigest_String() {
	d := fingerprint.Request{Method: "POST", Path: "/v1/payments", Query: "currency=EUR",
		ContentType: "application/json", Body: []byte(`{"amount":100,"to":"acct_1"}`)}.Digest()
	fmt.Println(d)
	// Output: e1adfc69ffc312a44d1f8a04123acc438a2c316fb96d1da579cd1e43d0fea7c2
}
