package grpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/internal/lease"
	"github.com/idemkey/idemkey/internal/txnctx"
	"github.com/idemkey/idemkey/txn"
)

// Method is the method recorded with the key records of guarded calls;
// the record's path is the call's full method name.
const Method = "GRPC"

// DefaultLeaseMargin is added to a call's remaining time to make its
// claim's lease (see Options.Lease).
const DefaultLeaseMargin = 5 * time.Second

// DefaultMaxLease bounds the default lease (see Options.Lease): a call
// whose deadline is further away than this holds its key for
// DefaultMaxLease, so that a server that dies under it leaves the key
// locked for at most that long, however distant the client's deadline.
const DefaultMaxLease = 15 * time.Minute

// DefaultFinalCodes are the status codes stored and replayed by default
// besides codes.OK: the answers a retry of the same request would get
// again (the analogue of the HTTP front door's "below 500"). Every other
// code (Unknown, Internal, Unavailable, DeadlineExceeded, Aborted,
// ResourceExhausted, Canceled, Unimplemented, DataLoss), like a panic,
// releases the key, so a retry executes again. Unauthenticated and
// PermissionDenied are never stored (idemkey.RefusesCaller: they are
// HTTP's 401 and 403): a retry with renewed credentials or granted
// permissions executes.
var DefaultFinalCodes = []codes.Code{
	codes.InvalidArgument, codes.NotFound, codes.AlreadyExists,
	codes.FailedPrecondition, codes.OutOfRange,
}

// Options configure the interceptors. The zero value of each field selects
// its default.
type Options struct {
	// Scope returns the caller's scope for a call: who is calling (tenant,
	// API key id, token subject), as the call's authentication
	// established it (its peer's TLS identity, its per-RPC credentials as
	// an authentication interceptor checked them), never a value the
	// client chooses freely. Keys of different scopes never meet. An error
	// answers Unauthenticated with a fixed message, never the error's
	// text, which goes to Logger at Warn. UnaryServerInterceptor refuses options
	// that set neither Scope nor SingleCaller, or both.
	Scope func(ctx context.Context) (string, error)
	// SingleCaller states that the service has exactly one caller, so that
	// every call shares one scope (""). Should a second caller ever reach
	// the service, two callers that use the same key get each other's
	// stored answers. Set it only where no other caller can exist.
	SingleCaller bool
	// Methods are the guarded methods, by full name
	// ("/package.Service/Method"). Guarded, when set, is consulted for the
	// methods Methods does not list. A call of any other method passes
	// through unguarded. Default: none. UnaryServerInterceptor panics
	// when a method listed is not a unary method of a service in the
	// global registry (protoregistry.GlobalFiles, where generated code
	// registers its services): a misspelt name would guard nothing.
	Methods []string
	// Guarded reports whether a method, by full name, is guarded.
	// UnaryServerInterceptor panics when it selects a streaming method
	// of a registered service; StreamServerInterceptor refuses the calls
	// of any other streaming method it selects.
	Guarded func(fullMethod string) bool
	// KeyFields names, per full method name, the field of the request
	// message that carries the key: a string field holding it, or a
	// message field of AEP-155's shape (aep.api.IdempotencyKey) whose
	// string field "key" holds it. A method listed here is guarded. The
	// key is then excluded from the fingerprint (the rest of the field,
	// such as first_sent, is not). When the field is unset or empty, the
	// key comes from the metadata; when both carry one, they must be
	// equal. UnaryServerInterceptor panics when a method's service is not
	// in the global registry, when the method streams, or when its request
	// has no such field.
	KeyFields map[string]string
	// Optional lets a guarded call without a key pass through unguarded
	// instead of failing with InvalidArgument.
	Optional bool
	// FinalCodes are the status codes stored and replayed besides
	// codes.OK (default DefaultFinalCodes). Other codes release the key.
	// A non-nil empty slice stores only successful answers.
	// UnaryServerInterceptor panics if it lists Unauthenticated or
	// PermissionDenied, which are never stored.
	FinalCodes []codes.Code
	// Lease returns the lock lease of a call's claim; zero or negative
	// selects the store's default. Default: the time left until the
	// call's deadline plus DefaultLeaseMargin, so a call cut off at its
	// deadline frees its key soon after, at most DefaultMaxLease; the
	// store's lease for a call without a deadline. When the default is
	// cut to DefaultMaxLease, the handler's context gets a deadline
	// DefaultLeaseMargin before the lease ends, so that no other call
	// reclaims the key while the handler still runs.
	Lease func(ctx context.Context) time.Duration
	// Logger receives a record at Warn, with the Scope function's error,
	// for each call refused because Scope failed; the client's status
	// never carries that error. Default (nil): slog.Default(), as it is
	// when the record is written.
	Logger *slog.Logger
	// Guard options: Mode, Cache, RetryAfter (the RetryInfo delay),
	// write timeouts, Observer. Its ShouldStore is replaced: FinalCodes
	// decides. Its FrontDoor defaults to idemkey.FrontDoorGRPC, so an
	// observer's events name this front door.
	Guard idemkey.Options
}

// options resolves optFns into options with their defaults.
func options(optFns []func(*Options)) Options {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.FinalCodes == nil {
		o.FinalCodes = DefaultFinalCodes
	}
	return o
}

// leaseOf returns the lease of a call's claim made at now and, when the
// default lease was cut to DefaultMaxLease, the deadline of its handler
// (zero otherwise).
func (o *Options) leaseOf(ctx context.Context, now time.Time) (time.Duration, time.Time) {
	if o.Lease != nil {
		return o.Lease(ctx), time.Time{}
	}
	if l := lease.FromDeadline(ctx, DefaultLeaseMargin, now); l <= DefaultMaxLease {
		return l, time.Time{}
	}
	return DefaultMaxLease, now.Add(DefaultMaxLease - DefaultLeaseMargin)
}

// refusesCaller reports whether code is the gRPC form of an answer that
// idemkey.RefusesCaller names, which a Guard never stores.
func refusesCaller(code codes.Code) bool {
	status := 0
	switch code {
	case codes.Unauthenticated:
		status = http.StatusUnauthorized
	case codes.PermissionDenied:
		status = http.StatusForbidden
	}
	return idemkey.RefusesCaller(status)
}

func (o *Options) guarded(fullMethod string) bool {
	if slices.Contains(o.Methods, fullMethod) {
		return true
	}
	if _, ok := o.KeyFields[fullMethod]; ok {
		return true
	}
	return o.Guarded != nil && o.Guarded(fullMethod)
}

// final reports whether a stored response is stored: a successful answer,
// or a status of FinalCodes.
func (o *Options) final(r idemkey.Response) bool {
	code, ok := codeOf(r)
	return ok && !refusesCaller(code) && (code == codes.OK || slices.Contains(o.FinalCodes, code))
}

// checkMethods panics when a method Methods names is not a unary method
// of a service in the global registry (a typo would be a method never
// guarded; a stream cannot be replayed), when FinalCodes lists a code
// that is never stored, or when Guarded selects a registered streaming
// method.
func (o *Options) checkMethods() {
	for _, m := range o.Methods {
		md, err := findMethod(m)
		switch {
		case err != nil:
			panic("grpc: Options.Methods: " + err.Error() + "; list each guarded method by its full name, as the generated code's FullMethodName constants spell it")
		case md.IsStreamingClient() || md.IsStreamingServer():
			panic(fmt.Sprintf("grpc: guarded method %s is a streaming method: a stream cannot be replayed", m))
		}
	}
	for _, c := range o.FinalCodes {
		if refusesCaller(c) {
			panic(fmt.Sprintf("grpc: Options.FinalCodes lists %v, which is never stored: an answer refusing the caller's credentials or permissions is not replayed; remove it", c))
		}
	}
	if o.Guarded == nil {
		return
	}
	protoregistry.GlobalFiles.RangeFiles(func(f protoreflect.FileDescriptor) bool {
		for i := 0; i < f.Services().Len(); i++ {
			sd := f.Services().Get(i)
			for j := 0; j < sd.Methods().Len(); j++ {
				md := sd.Methods().Get(j)
				full := "/" + string(sd.FullName()) + "/" + string(md.Name())
				if (md.IsStreamingClient() || md.IsStreamingServer()) && o.Guarded(full) {
					panic(fmt.Sprintf("grpc: Options.Guarded selects %s, a streaming method: a stream cannot be replayed; make Guarded return false for it", full))
				}
			}
		}
		return true
	})
}

var errScope = errors.New("grpc: no scope for the call")

// UnaryServerInterceptor returns an interceptor that guards the unary
// methods the options select with idempotency keys in store. For a call of
// a guarded method it
//
//   - takes the key from the request message's key field (Options.KeyFields)
//     or the KeyMetadata metadata: InvalidArgument when missing (unless
//     Optional) or malformed;
//   - takes the scope (Options.Scope): Unauthenticated on error;
//   - fingerprints the full method name and the request message in
//     deterministic binary form, without its key;
//   - runs the idemkey protocol: a replay answers with the stored
//     response message or status and the stored header and trailer
//     metadata, plus "idempotent-replayed: true" in its header; a
//     duplicate while the first is in flight gets Aborted with RetryInfo;
//     a key reused with another request gets FailedPrecondition; an
//     unreachable store gets Unavailable with RetryInfo and the handler
//     does not run;
//   - claims the key for the lease of Options.Lease (by default the
//     call's remaining time plus DefaultLeaseMargin, at most
//     DefaultMaxLease);
//   - otherwise runs the handler, with a *txn.Tx in its context
//     (txn.FromContext) on which it stages its DynamoDB writes, and its
//     header and trailer metadata held back; commits its answer with the
//     staged writes when it is final (codes.OK or Options.FinalCodes), or
//     releases the key and discards them otherwise; and only then sends
//     the answer and its metadata.
//
// A panic in the handler releases the key and is re-raised: install a
// recovery interceptor outside this one to turn it into a status.
//
// A call of another method passes through, with a *txn.Tx in its context
// too: what it stages is committed in one TransactWriteItems without a key
// record after the handler returns with codes.OK or a final code (a retry
// executes again); a failed commit answers in the handler's place:
// Unavailable with RetryInfo when DynamoDB answered that nothing was
// written, Internal with the reason OUTCOME_UNKNOWN and no RetryInfo when
// the writes may have landed (idemkey.ErrOutcomeUnknown), which
// UnaryClientInterceptor does not retry.
//
// UnaryServerInterceptor panics if store is nil, if the options set
// neither Scope nor SingleCaller or set both, if a method named in
// Methods is not a unary method of a registered service, if Guarded
// selects a registered streaming method, if FinalCodes lists
// Unauthenticated or PermissionDenied, or if a KeyFields entry cannot be
// resolved.
func UnaryServerInterceptor(store idemkey.Store, optFns ...func(*Options)) grpc.UnaryServerInterceptor {
	if store == nil {
		panic("grpc: UnaryServerInterceptor needs a store")
	}
	o := options(optFns)
	switch {
	case o.Scope == nil && !o.SingleCaller:
		panic("grpc: UnaryServerInterceptor needs Options.Scope, the caller's identity from the call's authentication " +
			"(without it, callers that use the same key get each other's answers); " +
			"set Options.SingleCaller instead only if the service has exactly one caller")
	case o.Scope != nil && o.SingleCaller:
		panic("grpc: Options.Scope and Options.SingleCaller are both set; set one")
	case o.SingleCaller:
		o.Scope = func(context.Context) (string, error) { return "", nil }
	}
	o.checkMethods()
	fields := resolveKeyFields("Options.KeyFields", o.KeyFields)
	gopts := o.Guard
	gopts.ShouldStore = o.final
	if gopts.FrontDoor == "" {
		gopts.FrontDoor = idemkey.FrontDoorGRPC
	}
	s := &server{guard: idemkey.New(store, func(g *idemkey.Options) { *g = gopts }), opts: o, fields: fields}
	return s.intercept
}

// StreamServerInterceptor returns an interceptor that refuses every
// streaming call of a method the options guard, with FailedPrecondition
// and the ErrorInfo reason "STREAMING_UNSUPPORTED": a stream cannot be
// replayed. Other streams pass through. Install it with the unary
// interceptor and the same options, so that a method guarded by mistake
// fails loudly instead of running unguarded.
func StreamServerInterceptor(optFns ...func(*Options)) grpc.StreamServerInterceptor {
	o := options(optFns)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if o.guarded(info.FullMethod) {
			return newStatus(codes.FailedPrecondition, ReasonStreaming,
				"method "+info.FullMethod+" is a streaming method and is configured as guarded by idempotency keys; a stream cannot be replayed", 0, nil)
		}
		return handler(srv, ss)
	}
}

// ReasonStreaming is the ErrorInfo reason of a guarded streaming call.
const ReasonStreaming = "STREAMING_UNSUPPORTED"

type server struct {
	guard  *idemkey.Guard
	opts   Options
	fields map[string]keyField
}

// handlerError carries an error of the handler's answer (one that cannot
// be stored) through Guard.Do.
type handlerError struct{ err error }

func (e *handlerError) Error() string { return e.err.Error() }

func (s *server) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !s.opts.guarded(info.FullMethod) {
		return s.unkeyed(ctx, req, handler)
	}
	msg, ok := req.(proto.Message)
	if !ok {
		return nil, newStatus(codes.Internal, ReasonInternal, "grpc: the request of a guarded method is not a protocol buffer message", 0, nil)
	}
	fromMessage, fpMsg := "", msg
	if f, ok := s.fields[info.FullMethod]; ok {
		fromMessage, fpMsg = f.extract(msg)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	key, found, err := keyOf(md, fromMessage)
	switch {
	case err != nil:
		return nil, statusOf(err)
	case !found && s.opts.Optional:
		return s.unkeyed(ctx, req, handler)
	case !found:
		return nil, statusOf(errMissingKey)
	}
	scope, err := s.opts.Scope(ctx)
	if err != nil {
		logger := s.opts.Logger
		if logger == nil {
			logger = slog.Default()
		}
		logger.LogAttrs(ctx, slog.LevelWarn, "idemkey",
			slog.String("method", info.FullMethod),
			slog.String("outcome", "unauthorized"),
			slog.String("code", codes.Unauthenticated.String()),
			slog.String("error", err.Error()))
		return nil, statusOf(errScope)
	}
	fp, err := digest(info.FullMethod, fpMsg)
	if err != nil {
		return nil, newStatus(codes.InvalidArgument, ReasonInvalidBody, "grpc: the request message does not encode: "+err.Error(), 0, nil)
	}
	leased, handlerDeadline := s.opts.leaseOf(ctx, time.Now())
	ireq := idemkey.Request{Scope: scope, Key: key, Method: Method, Path: info.FullMethod,
		Fingerprint: fp, Lease: leased}

	stream := grpc.ServerTransportStreamFromContext(ctx)
	var out any
	var herr error
	var header, trailer metadata.MD
	res, err := s.guard.Do(ctx, ireq, func(ctx context.Context) (idemkey.Response, error) {
		if !handlerDeadline.IsZero() {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, handlerDeadline)
			defer cancel()
		}
		c := &capture{method: info.FullMethod}
		out, herr = handler(grpc.NewContextWithServerTransportStream(ctx, c), req)
		header, trailer = c.metadata()
		r, err := encodeAnswer(out, herr, header, trailer)
		if err != nil {
			return r, &handlerError{err}
		}
		return r, nil
	})
	var he *handlerError
	switch {
	case errors.As(err, &he):
		return nil, newStatus(codes.Internal, ReasonInternal, he.err.Error(), 0, nil)
	case err != nil:
		return nil, statusOf(err)
	case !res.Replayed:
		forward(stream, header, trailer)
		return out, herr
	}
	a, err := decodeAnswer(res.Response)
	if err != nil {
		return nil, statusOf(err)
	}
	a.header.Set(ReplayedMetadata, "true")
	forward(stream, a.header, a.trailer)
	if a.err != nil {
		return nil, a.err
	}
	return a.resp, nil
}

// unkeyed runs a call without a key: its staged writes commit without a
// key record once the handler has answered with a final code.
func (s *server) unkeyed(ctx context.Context, req any, handler grpc.UnaryHandler) (any, error) {
	tx := txn.New()
	out, herr := handler(txnctx.With(ctx, tx), req)
	if tx.Len() == 0 {
		return out, herr
	}
	code := status.Code(herr)
	r := idemkey.Response{Status: statusMessage, Header: map[string][]string{"Content-Type": {answerContentType}}}
	if code != codes.OK {
		r.Status = statusCodeBase + int(code)
	}
	if err := s.guard.CommitUnkeyed(ctx, tx, r); err != nil {
		return nil, statusOf(err)
	}
	return out, herr
}
