package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRetentionOrLeaseThatCannotBeSafeIsRefusedBeforeServing(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-ttl", "1m", "-lease", "5m"}, "must be at least -lease"},
		{[]string{"-ttl", "-1h"}, "must be positive"},
		{[]string{"-lease", "0s"}, "must be positive"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append(tc.args, "-addr", "127.0.0.1:0"), &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
		if strings.Contains(out.String(), "listening") {
			t.Errorf("run(%q) started serving: %s", tc.args, out.String())
		}
	}
}
