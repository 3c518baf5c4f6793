package ddbtest

import (
	"fmt"
	"os"
	"testing"
)

// ReportVariable names the file that Report appends report lines to.
const ReportVariable = "IDEMKEY_RELIABILITY_REPORT"

// Report logs a test run's one-line report and, when the environment
// variable IDEMKEY_RELIABILITY_REPORT names a file, appends the line there
// (a relative path is relative to the test's package directory, where go
// test runs it). CI prints that file after the suite.
func Report(t testing.TB, line string) {
	t.Helper()
	t.Log(line)
	path := os.Getenv(ReportVariable)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Errorf("report file: %v", err)
		return
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, line); err != nil {
		t.Errorf("report file: %v", err)
	}
}
