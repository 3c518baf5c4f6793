// Package grpc puts idempotency keys in front of gRPC unary methods, with
// the protocol of package idemkey (idemkey.Guard): a guarded call with a
// key executes once, its effects staged on a txn.Tx commit in one DynamoDB
// transaction with the key record, and its retries get the stored answer.
// It translates between gRPC and the protocol and decides nothing the
// protocol does not. Import it under another name, as idemgrpc:
//
//	import idemgrpc "github.com/idemkey/idemkey/grpc"
//
// It is not for streaming methods (a stream cannot be replayed:
// StreamServerInterceptor refuses guarded ones), nor for the HTTP front
// door (package handler) or Lambda (package lambda).
//
// # Server
//
// UnaryServerInterceptor guards the methods Options.Methods,
// Options.Guarded and Options.KeyFields select. The key comes from the
// "idempotency-key" request metadata (KeyMetadata), with the syntax and
// limits of the HTTP Idempotency-Key header, or from a field of the
// request message: a string field, or AEP-155's aep.api.IdempotencyKey
// message, whose "key" it reads (https://aep.dev/155). The scope is
// required, as in package handler: Options.Scope or Options.SingleCaller.
//
// # Errors
//
// Following AIP-193 and AIP-194 (https://google.aip.dev/193,
// https://google.aip.dev/194), every status the interceptor answers in the
// handler's place carries a google.rpc.ErrorInfo detail with domain
// "idemkey" (ErrorDomain) and a reason naming the outcome:
//
//	key missing / malformed            InvalidArgument      MISSING_KEY / INVALID_KEY
//	request message does not encode    InvalidArgument      INVALID_BODY
//	scope refused                      Unauthenticated      UNAUTHORIZED
//	in flight                          Aborted + RetryInfo  IN_FLIGHT
//	key reused with another request    FailedPrecondition   KEY_REUSED
//	store unavailable                  Unavailable + RetryInfo  STORE_UNAVAILABLE (handler not run)
//	permanent store fault              Internal             the class: MISSING_TABLE, ACCESS_DENIED, ...
//	lock lost                          Aborted + RetryInfo  LOCK_LOST
//	staged condition failed            FailedPrecondition   EFFECT_CONDITION_FAILED (key released)
//	stored answer unreadable / omitted DataLoss             CORRUPT_RECORD / ANSWER_OMITTED
//	unkeyed writes, outcome unknown    Internal             OUTCOME_UNKNOWN (no RetryInfo: they may have landed)
//
// With Options.Guard.WaitInFlight, a call that finds its key in flight
// waits for the first call to complete, up to idemkey.WaitDeadlineMargin
// before its own deadline, and is answered its reply; IN_FLIGHT answers
// it only when the first still runs then, or failed.
//
// AEP-155 prescribes no code for a key reused with another request;
// FailedPrecondition is AIP-193's code for a request the client must not
// retry as it is. A permanent fault is Internal, not FailedPrecondition:
// the client cannot repair the service's tables or permissions, and no
// client retries it. RetryInfo appears exactly where a retry with the same
// key can succeed. A call of a method that is not guarded carries no
// key the server keeps, so when its writes may have landed
// (idemkey.ErrOutcomeUnknown) its answer is Internal without RetryInfo,
// which UnaryClientInterceptor never retries.
//
// # The same request
//
// The fingerprint is SHA-256 over the length-prefixed domain
// "idemkey/fingerprint/v1/grpc", the full method name, the request
// message's full name and the message in deterministic binary form
// (proto.MarshalOptions{Deterministic: true}), without its key when the
// key is taken from the message. The message is the one the server
// decoded, so for one server build:
//
//   - field order on the wire and map entry order do not matter (known
//     fields are re-encoded in field-number order, map entries sorted by
//     key);
//   - a scalar of implicit presence (proto3 without "optional") set to its
//     default is not encoded, so sending 0 equals sending nothing; a field
//     with explicit presence (optional, a message) set to its default
//     differs from one left unset;
//   - unknown fields (from a client with a newer schema) are kept as
//     received and are part of the request: the same call with and
//     without them differs;
//   - the fingerprint of a request depends on the protobuf library's
//     encoding, which is stable in practice but not promised across its
//     versions: a retry that reaches a server built with another version
//     may be refused as KEY_REUSED.
//
// The domain keeps gRPC and HTTP apart: a key used for an HTTP request
// and then for a gRPC call in the same scope is a key reused for another
// request (FailedPrecondition).
//
// # The stored answer
//
// A guarded call's answer is an idemkey.Response: Status is 200 for a
// response message and 600 plus the code for a final status (beyond any
// HTTP status, so an operator reading a record tells it apart); Header
// holds only Content-Type:
// application/vnd.idemkey.grpc-answer+proto; Body is
// an envelope in protocol buffer form holding the response message (its
// full name and deterministic bytes) or the google.rpc.Status (code,
// message, details), and the header and trailer metadata the handler set.
// A stored response without that Content-Type, which includes every
// response the HTTP and Lambda front doors store, is never decoded as a
// gRPC answer: it answers DataLoss. Which answers are stored follows
// Options.FinalCodes (the Guard's ShouldStore is set from it): codes.OK and
// DefaultFinalCodes by default, the analogue of HTTP's "below 500".
// Unauthenticated and PermissionDenied, HTTP's 401 and 403, are never
// stored (idemkey.RefusesCaller): the key is released, so a retry with
// renewed credentials or granted permissions executes.
//
// Metadata is stored minus the keys gRPC or this package manage:
// pseudo-headers, "grpc-" keys, content-type, the HTTP/2 connection
// headers, user-agent, date and ReplayedMetadata. A guarded handler's
// header and trailer metadata (grpc.SetHeader, grpc.SendHeader,
// grpc.SetTrailer) leave with the answer after the commit, never before;
// a replay sends the stored ones plus "idempotent-replayed: true" in its
// header.
//
// # Lease
//
// A claim's lease is by default the call's remaining time plus
// DefaultLeaseMargin: a call cut off at its deadline frees its key soon
// after, and a live one is never reclaimed under it. It is at most
// DefaultMaxLease (15 minutes), so that a server that dies under a call
// with a distant deadline does not hold its key until then; such a call's
// handler gets a context that ends DefaultLeaseMargin before its lease.
//
// # Client
//
// UnaryClientInterceptor gives each logical call one key, generated once
// before gRPC's own retries (transparent retries and a service-config
// retry policy resend the same metadata) and before its own optional
// retry loop (Aborted with RetryInfo, and Unavailable, with bounded
// backoff within the call's deadline). WithKey supplies a key of the
// caller's. A method whose request message carries its key
// (Options.KeyFields on the server) needs the same map in
// ClientOptions.KeyFields: the interceptor then sends the message's key
// alone, instead of a metadata key the server would refuse as a second,
// different key.
package grpc
