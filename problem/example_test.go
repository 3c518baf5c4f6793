package problem_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/idemkey/idemkey/problem"
)

// A handler answers a request it refuses with a problem document of the
// service's own type.
func ExampleWrite() {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, problem.Details{
			Type:   "https://example.com/problems/invalid-amount",
			Title:  "Invalid amount",
			Status: http.StatusBadRequest,
			Detail: "amount must be a positive number of cents",
		})
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/payments", nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	fmt.Println(rec.Body.String())
	// Output:
	// 400 application/problem+json
	// {"type":"https://example.com/problems/invalid-amount","title":"Invalid amount","status":400,"detail":"amount must be a positive number of cents"}
}
