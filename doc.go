// Package idemkey runs the idempotency-key protocol: it makes a request
// execute once, whatever the client, the network or the process does, with
// the key records stored in Amazon DynamoDB.
//
// The protocol is written once, here, in Guard.Do:
//
//	claim the key (one conditional PutItem)
//	  ├─ replay     the stored response answers the request
//	  ├─ in flight  ErrInFlight (HTTP 409 with Retry-After), or with
//	  │             Options.WaitInFlight a bounded wait for the duplicate's
//	  │             completion, then its replay
//	  ├─ mismatch   ErrMismatch (HTTP 422)
//	  └─ acquired   run the function with a txn.Tx in its context, then
//	                commit the response and the staged effects in one
//	                TransactWriteItems, or release the key when the
//	                response is not to be stored (a 5xx, an error, a panic)
//
// The front doors translate their inputs and outputs and decide nothing:
// package handler wraps an http.Handler, package lambda adapts AWS Lambda
// events. Package dynamostore owns the record and its DynamoDB expressions,
// package txn the staged effects, package fingerprint the request digest.
//
// A Guard fails closed: when DynamoDB cannot be reached the function is not
// run (ErrUnavailable), because running it unguarded could execute it twice.
// Writes committed without a key (CommitUnkeyed) whose commit failed
// without DynamoDB's answer are ErrOutcomeUnknown, which is not retryable:
// no key record tells a retry that they landed. An answer that refuses
// the caller (RefusesCaller: HTTP 401 and 403) is never stored.
//
// The public surface: Guard (New, Do, CommitUnkeyed) and its Options
// (Mode, Cache, timeouts), the Store it runs on, Request, Response and
// Result, and the errors Do returns.
package idemkey
