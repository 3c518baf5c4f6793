// Package reliability holds idemkey's end-to-end proofs under faults and
// crashes. It has no API: everything is in its tests, which drive the
// payments example (examples/payments) through the retrying client
// (package client) and then audit the DynamoDB tables.
//
//   - The chaos test serves the payments API in process, on a DynamoDB
//     client whose HTTP transport injects faults (internal/ddbtest.Chaos)
//     into the claim, the commit, the release and the fallback read:
//     throttling, server errors, and timeouts before and after DynamoDB
//     applied the call.
//   - The crash-restart test runs the payments server as a separate
//     process, against the standalone emulator (localstack/cmd/emulator)
//     or AWS_ENDPOINT_URL_DYNAMODB, and kills it with SIGKILL at random
//     points under load, restarting it on the same port.
//
// Both then check the same invariants: each logical operation has exactly
// one payment; every client got its payment or a *client.RetryError; each
// payment is pointed to by a completed key record, and each completed key
// record by its payment. Both are seeded (IDEMKEY_CHAOS_SEED,
// IDEMKEY_CRASH_SEED), bounded for CI, and print one report line; see
// RELIABILITY.md at the repository root for the figures and for how to run
// them longer.
//
// This package is not a test framework for applications: its helpers are
// unexported and shaped for the payments example.
package reliability
