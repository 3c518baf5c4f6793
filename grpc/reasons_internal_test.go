package grpc

import (
	"testing"

	"github.com/idemkey/idemkey/internal/problem"
)

// TestReasonsAreTheHTTPProblemNames keeps each ErrorInfo reason equal to
// the HTTP front door's problem name in upper snake case, as documented.
func TestReasonsAreTheHTTPProblemNames(t *testing.T) {
	for got, name := range map[string]string{
		ReasonMissingKey: problem.MissingKey, ReasonInvalidKey: problem.InvalidKey,
		ReasonUnauthorized: problem.Unauthorized, ReasonInFlight: problem.InFlight,
		ReasonKeyReused: problem.Mismatch, ReasonUnavailable: problem.Unavailable,
		ReasonLockLost: problem.LockLost, ReasonEffectFailed: problem.EffectFailed,
		ReasonCorrupt: problem.InvalidRecord, ReasonUnkeyed: problem.UnkeyedUnsupported, ReasonOutcomeUnknown: problem.OutcomeUnknown,
		ReasonInternal: problem.Internal,
	} {
		if want := reason(name); got != want {
			t.Errorf("reason for problem %q is %q, want %q", name, got, want)
		}
	}
}
