// Package problemtest checks RFC 9457 problem documents in tests.
package problemtest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/internal/problem"
)

// Check reports a test error unless status, header and body are the
// problem document of the given status and kind: content type
// application/problem+json, a matching status member, a type URI ending in
// the kind, and a title and a detail.
func Check(t testing.TB, status int, header http.Header, body string, wantStatus int, kind string) {
	t.Helper()
	if status != wantStatus {
		t.Errorf("status %d, want %d: %s", status, wantStatus, body)
	}
	if ct := header.Get("Content-Type"); ct != problem.ContentType {
		t.Errorf("Content-Type %q, want %q", ct, problem.ContentType)
	}
	var doc problem.Details
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Errorf("not a problem document: %v: %s", err, body)
		return
	}
	if doc.Status != wantStatus {
		t.Errorf("status member %d, want %d", doc.Status, wantStatus)
	}
	if !strings.HasSuffix(doc.Type, "#problem-"+kind) {
		t.Errorf("type %q, want the %q problem", doc.Type, kind)
	}
	if doc.Title == "" || doc.Detail == "" {
		t.Errorf("problem without title or detail: %s", body)
	}
}
