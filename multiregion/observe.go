package multiregion

import (
	"context"

	"github.com/idemkey/idemkey"
)

// Routing returns e in idemkey's event model: its kind's name (String),
// home and region, and error, without the scope or the key.
func (e Event) Routing() idemkey.RoutingEvent {
	return idemkey.RoutingEvent{Kind: e.Kind.String(), Home: e.Home, Region: e.Region, Err: e.Err}
}

// ObserverFor returns an Options.Observer that passes each routing
// decision, as Event.Routing gives it, to obs when obs is an
// idemkey.RoutingObserver (an OpenTelemetry adapter that counts them),
// and does nothing otherwise; obs can then also be the Guard's Observer.
// The decisions reach it without the request's context (a
// context.Background()).
func ObserverFor(obs idemkey.Observer) func(Event) {
	r, ok := obs.(idemkey.RoutingObserver)
	if !ok {
		return func(Event) {}
	}
	return func(e Event) { r.ObserveRouting(context.Background(), e.Routing()) }
}
