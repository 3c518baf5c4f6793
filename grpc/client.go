package grpc

import (
	"context"
	"slices"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/idemkey/idemkey/client"
	"github.com/idemkey/idemkey/internal/backoff"
	"github.com/idemkey/idemkey/internal/clientkey"
)

// ClientOptions configure UnaryClientInterceptor. The zero value of each
// field selects its default.
type ClientOptions struct {
	// Methods are the methods whose calls get a key, by full name;
	// Guarded, when set, is consulted for the others. Default (both
	// unset): every unary call, which a server that does not guard the
	// method ignores.
	Methods []string
	// Guarded reports whether calls of a method get a key.
	Guarded func(fullMethod string) bool
	// KeyFields names, per full method name, the field of the request
	// message that carries the key, as the server's Options.KeyFields
	// does: give the client the same map. A method listed here gets a
	// key. When the message's field holds a key, the interceptor sends
	// no key in the metadata (the server takes the message's); a key of
	// WithKey that differs from it fails the call with a *client.KeyError
	// before anything is sent. When the field is unset or empty, the
	// call gets a metadata key as any other. Without an entry, a call
	// whose message carries its key gets a metadata key too, and the
	// server refuses the two different keys with InvalidArgument.
	// UnaryClientInterceptor panics when an entry cannot be resolved
	// (see Options.KeyFields).
	KeyFields map[string]string
	// MaxAttempts bounds the attempts of one logical call, the first
	// included (default 1: the interceptor does not retry; gRPC's own
	// retry policy, configured on the channel, still applies under it).
	// An attempt is retried only after Unavailable, or Aborted with a
	// RetryInfo detail (a key in flight, a lost lock): the codes a retry
	// with the same key can change. Never after another code: a
	// FailedPrecondition (key reused) or an Internal fault meets a retry
	// again.
	MaxAttempts int
	// BaseDelay is the first backoff ceiling after an Unavailable without
	// RetryInfo (default 100ms); it doubles per attempt, with full jitter.
	BaseDelay time.Duration
	// MaxDelay caps every wait, RetryInfo's included (default 5s).
	MaxDelay time.Duration
	// NewKey returns a new key (default client.NewKey: 26 characters of
	// base32 from crypto/rand).
	NewKey func() string
}

// WithKey returns a copy of ctx carrying key as the idempotency key of the
// calls made with it: UnaryClientInterceptor sends it instead of a new
// key. Use it to keep one key across retries of your own, above the
// interceptor's. It is client.WithKey: a context carries one key for the
// HTTP client and for gRPC. A key the call's outgoing metadata already
// holds takes precedence. A key client.WithKey's rule refuses fails the
// call with a *client.KeyError, and nothing is sent.
func WithKey(ctx context.Context, key string) context.Context { return client.WithKey(ctx, key) }

// UnaryClientInterceptor returns an interceptor that gives each logical
// call of the selected methods one idempotency key, in the KeyMetadata
// metadata: the caller's (its outgoing metadata, or WithKey), or a new one;
// none for a call of a ClientOptions.KeyFields method whose request
// message carries its key.
// It is set once, before gRPC's transparent retries and retry policy and
// before this interceptor's own attempts, so every attempt carries it.
//
// With MaxAttempts above 1, it retries a call that failed with
// Unavailable, or Aborted with RetryInfo, after RetryInfo's delay (or a
// backoff for an Unavailable without one), capped by MaxDelay; it stops,
// returning the last error, when the wait would pass the call's deadline
// or the context ends.
//
// The key it sets follows the rule of client.WithKey: 1 to
// client.MaxKeyLength printable ASCII characters (0x20 to 0x7E). A key of
// WithKey or NewKey that breaks it fails the call, before anything is sent,
// with a *client.KeyError, which matches client.ErrInvalidKey, as
// client.Transport does. A key already in the outgoing metadata is sent as
// it is.
func UnaryClientInterceptor(optFns ...func(*ClientOptions)) grpc.UnaryClientInterceptor {
	var o ClientOptions
	for _, fn := range optFns {
		fn(&o)
	}
	if o.MaxAttempts < 1 {
		o.MaxAttempts = 1
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = 100 * time.Millisecond
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = 5 * time.Second
	}
	if o.NewKey == nil {
		o.NewKey = client.NewKey
	}
	fields := resolveKeyFields("ClientOptions.KeyFields", o.KeyFields)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		f, keyed := fields[method]
		if !keyed && (o.Methods != nil || o.Guarded != nil) && !slices.Contains(o.Methods, method) && (o.Guarded == nil || !o.Guarded(method)) {
			return invoker(ctx, method, req, reply, cc, callOpts...)
		}
		fromMessage := ""
		if msg, ok := req.(proto.Message); ok && keyed {
			fromMessage, _ = f.extract(msg)
		}
		if md, _ := metadata.FromOutgoingContext(ctx); len(md.Get(KeyMetadata)) == 0 {
			key, ok := client.KeyFromContext(ctx)
			switch {
			case fromMessage != "" && ok && key != fromMessage:
				return &client.KeyError{Reason: "the request message and WithKey carry different keys"}
			case fromMessage != "":
				key = fromMessage // sent in the message alone
			case !ok:
				key = o.NewKey()
			}
			if why := clientkey.Check(key); why != "" {
				return &client.KeyError{Reason: why}
			}
			if fromMessage == "" {
				ctx = metadata.AppendToOutgoingContext(ctx, KeyMetadata, quote(key))
			}
		}
		for attempt := 0; ; attempt++ {
			err := invoker(ctx, method, req, reply, cc, callOpts...)
			if err == nil || attempt+1 >= o.MaxAttempts {
				return err
			}
			wait, ok := o.retryDelay(err, attempt)
			if !ok {
				return err
			}
			if deadline, has := ctx.Deadline(); has && time.Until(deadline) <= wait {
				return err
			}
			if backoff.Sleep(ctx, wait) != nil {
				return err
			}
		}
	}
}

// retryDelay returns how long to wait before retrying after err, and
// false when err is not retried.
func (o *ClientOptions) retryDelay(err error, attempt int) (time.Duration, bool) {
	st := status.Convert(err)
	var hint time.Duration
	hinted := false
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			hint, hinted = ri.GetRetryDelay().AsDuration(), true
		}
	}
	switch {
	case st.Code() == codes.Aborted && hinted, st.Code() == codes.Unavailable && hinted:
		return min(max(hint, 0), o.MaxDelay), true
	case st.Code() == codes.Unavailable:
		return backoff.Jittered(o.BaseDelay, o.MaxDelay, attempt), true
	}
	return 0, false
}
