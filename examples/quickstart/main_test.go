package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/localstack"
)

// deleteTablesItCreates deletes the quickstart's tables after the test
// when the test created them on an external endpoint (the embedded
// emulator's vanish with the process). Tables that were already there are
// left alone.
func deleteTablesItCreates(t *testing.T) {
	t.Helper()
	if os.Getenv(localstack.EndpointEnv) == "" {
		return
	}
	ep, err := localstack.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ep.Close() })
	for _, table := range []string{"idemkey-keys", "payments"} {
		_, err := ep.Client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		var missing *types.ResourceNotFoundException
		if !errors.As(err, &missing) {
			continue
		}
		t.Cleanup(func() {
			if _, err := ep.Client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
				t.Errorf("deleting %s: %v", table, err)
			}
		})
	}
}

func TestDemoReplaysTheRetryAndRefusesTheKeyForAnotherPayment(t *testing.T) {
	deleteTablesItCreates(t)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-demo"}, &out); err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^POST \{"amount":1250\} -> 201 Created, Idempotent-Replayed: ""
  \{"id":"(pay_[A-Z2-7]{26})","amount":1250\}
POST \{"amount":1250\} -> 201 Created, Idempotent-Replayed: "true"
  \{"id":"(pay_[A-Z2-7]{26})","amount":1250\}
POST \{"amount":9999\} -> 422 Unprocessable Entity, Idempotent-Replayed: ""
  \{"type":"https://github.com/idemkey/idemkey/blob/main/docs/http.md#problem-key-reused",.*\}
$`)
	m := want.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("demo printed:\n%s", out.String())
	}
	if m[1] != m[2] {
		t.Errorf("the retry got payment %s, the first request %s: it executed twice", m[2], m[1])
	}
}

func post(t *testing.T, url, token, key, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url+"/payments", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestServiceValidatesItsInputScopesByTenantAndAnswersJSON(t *testing.T) {
	deleteTablesItCreates(t)
	ep := localstack.ForTest(t)
	svc, err := newService(context.Background(), ep.Client)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc)
	defer srv.Close()

	resp, body := post(t, srv.URL, "token-of-acme", "k-invalid", `{"amount":-3}`)
	if resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "application/problem+json" ||
		!strings.Contains(body, `"type":"https://example.com/problems/invalid-payment"`) {
		t.Errorf("invalid amount: %s %q %s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	resp, body = post(t, srv.URL, "", "k-anon", `{"amount":3}`)
	if resp.StatusCode != 401 || !strings.Contains(body, `"type":"https://example.com/problems/unauthorized"`) {
		t.Errorf("no token: %s %s", resp.Status, body)
	}

	acme, acmeBody := post(t, srv.URL, "token-of-acme", "order-1", `{"amount":3}`)
	if acme.StatusCode != 201 || acme.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("create: %s %q %s", acme.Status, acme.Header.Get("Content-Type"), acmeBody)
	}
	// The same key from another tenant is another operation: it executes.
	globex, globexBody := post(t, srv.URL, "token-of-globex", "order-1", `{"amount":4}`)
	if globex.StatusCode != 201 || globex.Header.Get("Idempotent-Replayed") != "" || globexBody == acmeBody {
		t.Errorf("another tenant's key: %s replayed=%q %s", globex.Status, globex.Header.Get("Idempotent-Replayed"), globexBody)
	}
	// Both payments are in the table.
	for _, b := range []string{acmeBody, globexBody} {
		id := regexp.MustCompile(`pay_[A-Z2-7]+`).FindString(b)
		out, err := ep.Client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("payments"),
			Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}, ConsistentRead: aws.Bool(true)})
		if err != nil || out.Item == nil {
			t.Errorf("payment %s not in the table: %v", id, err)
		}
	}
}
