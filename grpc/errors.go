package grpc

import (
	"errors"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/txn"
)

// ErrorDomain is the domain of the google.rpc.ErrorInfo detail of every
// status this package answers with in the handler's place.
const ErrorDomain = "idemkey"

// Reasons of the ErrorInfo details: the names of the HTTP front door's
// problem types, in upper snake case. A permanent store fault's reason is
// its dynamostore.Class in the same form (MISSING_TABLE, ACCESS_DENIED,
// INVALID_WRITE, TOO_MANY_ACTIONS, STORE_REJECTED).
const (
	ReasonMissingKey     = "MISSING_KEY"                // InvalidArgument
	ReasonInvalidKey     = "INVALID_KEY"                // InvalidArgument
	ReasonInvalidBody    = "INVALID_BODY"               // InvalidArgument
	ReasonUnauthorized   = "UNAUTHORIZED"               // Unauthenticated
	ReasonInFlight       = "IN_FLIGHT"                  // Aborted, with RetryInfo
	ReasonKeyReused      = "KEY_REUSED"                 // FailedPrecondition
	ReasonUnavailable    = "STORE_UNAVAILABLE"          // Unavailable, with RetryInfo
	ReasonLockLost       = "LOCK_LOST"                  // Aborted, with RetryInfo
	ReasonEffectFailed   = "EFFECT_CONDITION_FAILED"    // FailedPrecondition
	ReasonCorrupt        = "CORRUPT_RECORD"             // DataLoss
	ReasonOmitted        = "ANSWER_OMITTED"             // DataLoss
	ReasonUnkeyed        = "UNKEYED_WRITES_UNSUPPORTED" // Internal
	ReasonOutcomeUnknown = "OUTCOME_UNKNOWN"            // Internal, without RetryInfo
	ReasonInternal       = "INTERNAL"                   // Internal
)

// reason turns a problem name ("key-reused") into an ErrorInfo reason
// ("KEY_REUSED").
func reason(name string) string { return strings.ToUpper(strings.ReplaceAll(name, "-", "_")) }

// lockLostRetry is the RetryInfo delay of a lost lock: the same Retry-After
// as the HTTP front door's.
const lockLostRetry = time.Second

// newStatus builds a status with an ErrorInfo detail of reason and, when
// retry is positive, a RetryInfo detail with that delay.
func newStatus(code codes.Code, why, msg string, retry time.Duration, meta map[string]string) error {
	st := status.New(code, msg)
	details := []protoadapt.MessageV1{protoadapt.MessageV1Of(&errdetails.ErrorInfo{Reason: why, Domain: ErrorDomain, Metadata: meta})}
	if retry > 0 {
		details = append(details, protoadapt.MessageV1Of(&errdetails.RetryInfo{RetryDelay: durationpb.New(retry)}))
	}
	if d, err := st.WithDetails(details...); err == nil {
		st = d
	}
	return st.Err()
}

// statusOf translates an error of idemkey.Guard (or of the call's key or
// scope) into the status the client receives.
//
//   - in flight: Aborted with RetryInfo (AIP-194: retry the whole
//     operation later; the client interceptor does);
//   - key reused with another request: FailedPrecondition (AEP-155 names
//     no code; AIP-193's rule for FailedPrecondition is that the client
//     must not retry until something changed, here its request or its key);
//   - store unavailable: Unavailable with RetryInfo;
//   - a permanent store fault: Internal, without RetryInfo (the client
//     cannot fix it and a retry meets it again), reason its class;
//   - lock lost: Aborted with RetryInfo, as the HTTP front door's 409
//     with Retry-After;
//   - a staged effect's condition failed: FailedPrecondition (the same
//     request fails again until the state it depends on changes);
//   - a corrupt stored record: DataLoss;
//   - writes of a call without a key whose commit's outcome is unknown
//     (idemkey.ErrOutcomeUnknown): Internal without RetryInfo, which
//     the client interceptor does not retry.
func statusOf(err error) error {
	var inFlight *idemkey.InFlightError
	var unavailable *idemkey.UnavailableError
	var permanent *idemkey.PermanentError
	var cond *txn.ConditionFailedError
	var ke *keyError
	switch {
	case errors.Is(err, errMissingKey):
		return newStatus(codes.InvalidArgument, ReasonMissingKey,
			"this method requires an idempotency key ("+KeyMetadata+" metadata): one key per logical operation, reused on every retry", 0, nil)
	case errors.As(err, &ke):
		return newStatus(codes.InvalidArgument, ReasonInvalidKey, ke.Reason, 0, nil)
	case errors.Is(err, errScope):
		return newStatus(codes.Unauthenticated, ReasonUnauthorized,
			"the call does not identify its caller, so its idempotency key cannot be scoped to it; call with the credentials this service accepts", 0, nil)
	case errors.As(err, &inFlight):
		return newStatus(codes.Aborted, ReasonInFlight,
			"a call with this idempotency key is still being processed; retry after the delay in RetryInfo", inFlight.RetryAfter, nil)
	case errors.Is(err, idemkey.ErrMismatch):
		return newStatus(codes.FailedPrecondition, ReasonKeyReused,
			"this idempotency key was already used for a different request (method or message); use a new key for a new operation", 0, nil)
	case errors.As(err, &unavailable):
		return newStatus(codes.Unavailable, ReasonUnavailable,
			"the idempotency key store could not be reached, was busy, or did not confirm the commit; retry with the same key after the delay in RetryInfo: "+
				"a call that was committed is replayed, one that was not is executed", unavailable.RetryAfter, nil)
	case errors.As(err, &permanent):
		return newStatus(codes.Internal, reason(string(permanent.Class)),
			"DynamoDB refused a call of this request ("+string(permanent.Class)+"); nothing was committed, and retrying with the same key fails the same way until the service is fixed",
			0, map[string]string{"class": string(permanent.Class)})
	case errors.Is(err, idemkey.ErrLockLost):
		return newStatus(codes.Aborted, ReasonLockLost,
			"this call took longer than its lock lease and another call with the same key took over; nothing from this attempt was saved; retry with the same key", lockLostRetry, nil)
	case errors.As(err, &cond):
		return newStatus(codes.FailedPrecondition, ReasonEffectFailed,
			"a condition on the call's effects did not hold when they were committed, so nothing was saved and the key was released; the same request fails the same way unless the state it depends on changes", 0, nil)
	case errors.Is(err, dynamostore.ErrInvalidRequest):
		return newStatus(codes.InvalidArgument, ReasonInvalidKey, err.Error(), 0, nil)
	case errors.Is(err, idemkey.ErrOutcomeUnknown):
		return newStatus(codes.Internal, ReasonOutcomeUnknown,
			"the call carried no idempotency key, and whether its writes were committed is unknown: the store did not answer; "+
				"do not retry it as it is, which could apply them twice: read the state it changes first, and send a key to make retries safe", 0, nil)
	case errors.Is(err, idemkey.ErrUnkeyedUnsupported):
		return newStatus(codes.Internal, ReasonUnkeyed,
			"this call staged writes without an idempotency key, and this service's store commits staged writes only with one; nothing was written", 0, nil)
	case errors.Is(err, errAnswerOmitted):
		return newStatus(codes.DataLoss, ReasonOmitted,
			"this idempotency key's call completed, but its answer was too large to store; it is not executed again, and its answer cannot be sent", 0, nil)
	case errors.Is(err, dynamostore.ErrCorruptRecord), errors.Is(err, errNotAnswer):
		return newStatus(codes.DataLoss, ReasonCorrupt,
			"the stored answer of this idempotency key cannot be read, so it is neither replayed nor executed again", 0, nil)
	}
	return newStatus(codes.Internal, ReasonInternal, "the call's result could not be saved; nothing was committed", 0, nil)
}
