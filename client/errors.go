package client

import (
	"errors"
	"strconv"
	"strings"
)

var (
	// ErrAttemptsExhausted is the Reason of a RetryError whose request
	// used all of Options.MaxAttempts.
	ErrAttemptsExhausted = errors.New("client: attempts exhausted")
	// ErrBudgetExhausted is the Reason of a RetryError whose next wait
	// would have ended beyond Options.MaxElapsed.
	ErrBudgetExhausted = errors.New("client: retry time budget exhausted")
	// ErrNotRetryable is the Reason of a RetryError whose last attempt
	// failed with a transport error that a retry cannot fix (a TLS
	// certificate that does not verify).
	ErrNotRetryable = errors.New("client: transport error is not retryable")
	// ErrBodyNotRewindable: the request body cannot be sent again. Either
	// it has no GetBody and is longer than Options.MaxBufferBytes (nothing
	// was sent), or its GetBody failed before a retry (a RetryError wraps
	// it then).
	ErrBodyNotRewindable = errors.New("client: request body cannot be rewound for a retry")
	// ErrInvalidKey: the key stored with WithKey cannot be sent. Match
	// *KeyError for why. Nothing was sent.
	ErrInvalidKey = errors.New("client: invalid idempotency key")
)

// KeyError says why a key given to WithKey was refused. It matches
// ErrInvalidKey. It does not hold the key, so that logging it reveals
// nothing.
type KeyError struct{ Reason string }

func (e *KeyError) Error() string   { return ErrInvalidKey.Error() + ": " + e.Reason }
func (e *KeyError) Is(t error) bool { return t == ErrInvalidKey }

// RetryError is the error of a guarded request that ends without a
// response to return: its attempts, its time budget or its context ran
// out, or a transport error was not retryable. The operation may or may
// not have executed on the server; retrying it later with the same Key
// (see WithKey) either replays its result or executes it, once.
//
// RetryError matches its Reason and its Last error with errors.Is and
// errors.As: errors.Is(err, context.Canceled) holds for a request whose
// context was canceled.
type RetryError struct {
	// Key is the idempotency key every attempt carried, as WithKey takes
	// it (the content of an sf-string header).
	Key string
	// Attempts is the number of attempts sent.
	Attempts int
	// LastStatus is the status of the last attempt's response, or 0 when
	// the last attempt got no response.
	LastStatus int
	// Last is the last attempt's transport error, or nil when it got a
	// response.
	Last error
	// Reason is why the transport stopped: ErrAttemptsExhausted,
	// ErrBudgetExhausted, ErrNotRetryable, an error wrapping
	// ErrBodyNotRewindable, or the context's error.
	Reason error
}

func (e *RetryError) Error() string {
	var b strings.Builder
	b.WriteString("client: gave up after ")
	b.WriteString(strconv.Itoa(e.Attempts))
	if e.Attempts == 1 {
		b.WriteString(" attempt")
	} else {
		b.WriteString(" attempts")
	}
	if e.Reason != nil {
		b.WriteString(" (")
		b.WriteString(e.Reason.Error())
		b.WriteString(")")
	}
	switch {
	case e.LastStatus != 0:
		b.WriteString(": last status ")
		b.WriteString(strconv.Itoa(e.LastStatus))
	case e.Last != nil:
		b.WriteString(": ")
		b.WriteString(e.Last.Error())
	}
	return b.String()
}

// Unwrap returns Reason and Last, those that are set.
func (e *RetryError) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.Reason, e.Last} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
