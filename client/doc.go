// Package client is the client half of idemkey's contract: an
// http.RoundTripper that sends one Idempotency-Key per logical request and
// retries that request, with that same key, until it gets an answer it can
// trust.
//
// # One key per logical operation, generated outside the retry loop
//
// A server guarded by idemkey executes a key once and answers every later
// request with that key from its stored response. That makes a retry safe
// only if the retry carries the key of the first attempt. A key generated
// inside the retry loop changes on every attempt, so the server sees each
// retry as a new operation and executes it again: the most common
// client-side idempotency bug, and one that looks correct in review.
//
// Transport therefore decides the key once per call to RoundTrip (one call
// of http.Client.Do is one logical request), before the first attempt, and
// sends it on every attempt:
//
//   - an Idempotency-Key header already on the request is sent unchanged;
//   - otherwise a key stored in the request's context with WithKey, sent
//     as an RFC 8941 sf-string;
//   - otherwise a new random key from NewKey (crypto/rand).
//
// A caller with its own, higher-level retries (a job queue, an operator
// replaying a batch) keeps the operation single by reusing the key across
// them: store it with WithKey (RetryError.Key holds it in the form WithKey
// takes), or send the header value of the answered request
// (resp.Request.Header) again as the request's Idempotency-Key header,
// which the transport sends unchanged. That value is the key as sent on
// the wire, an sf-string in quotes: given to WithKey it would be another
// key.
//
// # What is retried, and why that is safe
//
// Only the guarded methods (Options.Methods, default POST and PATCH) get a
// key and retries. Each attempt either did not execute the operation or
// executed it, and the key turns both cases into a correct retry: the
// server executes a key that was not committed and replays one that was.
// So the transport retries every outcome that leaves the client without a
// trustworthy answer:
//
//   - transport errors: a refused or dropped connection, a reset, an
//     unexpected EOF, a per-attempt timeout (Options.AttemptTimeout). The
//     request may have executed; the retry replays it if it did.
//   - 409 Conflict with Retry-After: idemkey's answer while another attempt
//     with the same key is still running (often this client's own earlier
//     attempt, whose response was lost), and when an attempt lost its lock:
//     nothing of it was saved.
//   - 425 Too Early and 429 Too Many Requests: the server asks to come back.
//   - 500 with Retry-After: the server asks to come back.
//   - 502 and 504, from a proxy: the server either committed (the retry
//     replays) or did not (the retry executes).
//   - 503: idemkey's store is unreachable or busy and nothing was
//     committed (for a route the server does not guard, DynamoDB answered
//     that the request's writes were not written).
//
// This default set is Options.RetryStatuses, and the statuses retried only
// with Retry-After are Options.RetryAfterStatuses. Every other answer is
// returned to the caller at once: 2xx and 3xx; a 409 without Retry-After
// (idemkey's answer when a staged condition failed: the same request fails
// the same way until the state it depends on changes); a 500 without
// Retry-After (idemkey's answer to a fault that a retry meets again, such
// as a missing table; its "outcome-unknown" answer when the writes of a
// request the server does not guard may have landed, which a retry would
// apply again, since the server ignores the key there; and a handler's
// own 500, which the retry would probably repeat); and every other 4xx, 422 in particular (the key was
// already used for a different request: a bug that retrying cannot fix)
// and 400, 401, 403, 404 and 413, whose answer a retry would only repeat.
//
// Against a server that does not honour Idempotency-Key, a retry after an
// ambiguous failure can execute a POST twice: use the transport with
// servers that do, or narrow RetryStatuses and accept that transport
// errors are still retried.
//
// # Waiting between attempts
//
// The wait before attempt n+1 is a full-jitter exponential backoff: a
// uniform random duration in [0, min(MaxDelay, BaseDelay·2^(n-1))]. When
// the response carries Retry-After (seconds or an HTTP-date), the wait is
// at least that long, with Retry-After capped at MaxDelay. The transport
// stops after MaxAttempts attempts, or when the next wait would end beyond
// the MaxElapsed budget, and returns a *RetryError. The request's context
// ends everything at once, during an attempt or during a wait.
//
// # Bodies
//
// Every attempt sends the whole body. A request with GetBody (as built by
// http.NewRequest from a *bytes.Buffer, *bytes.Reader or *strings.Reader)
// is rewound with it. Any other body is read once into memory, up to
// Options.MaxBufferBytes (default 1 MiB, the idemkey handler's default
// body limit); a longer body fails with ErrBodyNotRewindable before
// anything is sent, so the caller knows nothing executed. Discarded
// responses are drained (up to 64 KiB) and closed, so their connections
// can be reused.
//
// # What this package is not for
//
// It is not a general retry library. Methods that are not guarded pass
// through untouched: no key and no retries. GET, HEAD, PUT and DELETE are
// idempotent by definition and net/http's Transport already replays
// idempotent requests whose connection failed before the response; a
// policy for retrying their error statuses belongs to the caller.
// (net/http's Transport also replays a request carrying an Idempotency-Key
// header in that situation; such a replay carries the same key.)
//
// It does not make a key outlive the server's retention (24 hours by
// default for idemkey): a retry arriving later executes again. Nor does it
// carry a key across redirects that it did not get from the caller: the
// http.Client follows a 307 or 308 with a new call to RoundTrip, which
// generates a new key unless the key came from the request header or from
// WithKey, both of which the Client passes on to the next hop.
package client
