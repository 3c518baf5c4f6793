package problem_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idemkey/idemkey/problem"
)

func TestWriteFillsTheDefaultsRFC9457Gives(t *testing.T) {
	rec := httptest.NewRecorder()
	problem.Write(rec, problem.Details{Title: "Out of range", Status: 200})
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500 for a status that is not an error", rec.Code)
	}
	var doc problem.Details
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Type != "about:blank" || doc.Status != 500 {
		t.Fatalf("document %+v, want type about:blank and status 500", doc)
	}
	if got := rec.Header().Get("Cache-Control"); got != "no-store" {
		t.Fatalf("Cache-Control %q, want no-store", got)
	}
}

func TestWriteKeepsHeadersSetBefore(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Set("Retry-After", "3")
	problem.Write(rec, problem.Details{Type: "https://example.com/p/busy", Title: "Busy", Status: 503})
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "3" {
		t.Fatalf("status %d, Retry-After %q; want 503 and 3", rec.Code, rec.Header().Get("Retry-After"))
	}
}

func TestWriteNeverPanicsOnAnyStatus(t *testing.T) {
	for _, status := range []int{-1, 0, 99, 1000, 1 << 30} {
		rec := httptest.NewRecorder()
		problem.Write(rec, problem.Details{Status: status})
		if rec.Code != 500 {
			t.Errorf("status %d sent as %d, want 500", status, rec.Code)
		}
	}
}
