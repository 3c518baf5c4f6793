package lambda

import (
	"net/http"
	"time"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/handler"
)

// MiddlewareOptions configure Middleware. The zero value of each field
// selects its default.
type MiddlewareOptions struct {
	// Handler configures the handler.New middleware underneath: methods,
	// body limit, Guard options, logger. Its Scope, when nil and
	// SingleCaller is not set, is EventScope with the Scope options below;
	// EventScope answers 401 to an event that identifies no caller. Set
	// Handler.SingleCaller instead only for a service with one caller
	// (see handler.Options), where every request shares one scope.
	Handler handler.Options
	// Scope tunes the default scope rules (see EventScope); unused when
	// Handler.Scope or Handler.SingleCaller is set.
	Scope ScopeOptions
	// LeaseMargin is added to the invocation's remaining time to make each
	// claim's lease (default DefaultLeaseMargin); unused when Handler.Lease
	// is set.
	LeaseMargin time.Duration
}

// Middleware returns handler.New's middleware over store, set up for
// requests served by this package's front doors: the scope comes from the
// event (EventScope, unless Handler.Scope or Handler.SingleCaller is set),
// and every claim's lock lease is the invocation's remaining time plus
// LeaseMargin (handler.LeaseFromDeadline, unless Handler.Lease is set; the
// store's own lease when the request's context has no deadline).
// Everything else is package handler's contract, unchanged. It panics if
// store is nil, and as handler.New panics for invalid Handler options
// (both Scope and SingleCaller set, for one).
func Middleware(store idemkey.Store, optFns ...func(*MiddlewareOptions)) func(http.Handler) http.Handler {
	if store == nil {
		panic("lambda: Middleware needs a store")
	}
	var o MiddlewareOptions
	for _, fn := range optFns {
		fn(&o)
	}
	if o.LeaseMargin <= 0 {
		o.LeaseMargin = DefaultLeaseMargin
	}
	hopts := o.Handler
	if hopts.Scope == nil && !hopts.SingleCaller {
		hopts.Scope = EventScope(func(s *ScopeOptions) { *s = o.Scope })
	}
	if hopts.Lease == nil {
		hopts.Lease = handler.LeaseFromDeadline(o.LeaseMargin)
	}
	return handler.New(store, func(h *handler.Options) { *h = hopts })
}
