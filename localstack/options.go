package localstack

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Options configures Start, ForTest and NewHandler. The zero value is
// EndpointEnv's endpoint when it is set, else the embedded emulator on a
// random loopback port.
type Options struct {
	// Embedded forces the embedded emulator even when EndpointEnv is set.
	Embedded bool

	// Region is the clients' region. When empty: for the embedded emulator
	// AWS_REGION, else DefaultRegion; for an external endpoint the one
	// config.LoadDefaultConfig finds, else DefaultRegion.
	Region string

	// HTTPClient is the SDK clients' HTTP client; nil is the SDK's default.
	HTTPClient aws.HTTPClient

	// Latency, when set, makes every call of the SDK clients take a seeded
	// round-trip time (see Latency), in front of HTTPClient, on any
	// endpoint. Nil adds no delay.
	Latency *Latency

	// InProcess makes the SDK clients of the embedded emulator call its
	// handler in the caller's goroutine instead of over a socket;
	// HTTPClient is then not used, Latency still is. The emulator is
	// served on its port as well. No effect on an external endpoint.
	InProcess bool

	// Now is the embedded emulator's clock, for the ClientRequestToken
	// window; nil is time.Now.
	Now func() time.Time
}

func resolveOptions(optFns []func(*Options)) Options {
	var o Options
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// clientFor returns base (nil: the SDK's default) behind Latency, if set.
func (o Options) clientFor(base aws.HTTPClient) aws.HTTPClient {
	if o.Latency == nil {
		return base
	}
	return newLatencyClient(base, *o.Latency)
}
