package localstack

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Options configures Start, ForTest and NewHandler. The zero value selects an
// external endpoint when EndpointEnv is set and otherwise the embedded
// emulator on a random loopback port.
type Options struct {
	// Embedded forces the embedded emulator even when EndpointEnv is set.
	Embedded bool

	// Addr is the TCP address Start serves the embedded emulator on. The
	// default is "127.0.0.1:0": loopback, on a port chosen by the kernel.
	Addr string

	// Region is the AWS region of the clients. When empty, the embedded
	// emulator uses AWS_REGION if set and DefaultRegion otherwise; an
	// external endpoint uses the region config.LoadDefaultConfig finds
	// (AWS_REGION, AWS_DEFAULT_REGION, the shared configuration) and
	// DefaultRegion if it finds none.
	Region string

	// HTTPClient is the HTTP client of the SDK clients Start configures.
	// Nil selects the SDK's default.
	HTTPClient aws.HTTPClient

	// Latency, when set, makes every call of the SDK clients Start
	// configures take a seeded per-call round-trip time (see Latency),
	// in front of HTTPClient, for an embedded emulator and an external
	// endpoint alike. The endpoint's own time to answer counts toward it;
	// what remains is spent in the client, outside the embedded
	// emulator's serialisation of requests. The clients of a loopback
	// external endpoint, which send one request at a time (see Start),
	// spend it within their turn. Nil adds no delay.
	Latency *Latency

	// InProcess makes the SDK clients Start configures for the embedded
	// emulator call its handler in the caller's goroutine instead of
	// sending each request over a loopback socket: no connection, no
	// server goroutine, no system call. HTTPClient is then not used (its
	// transport settings have nothing to act on); Latency still applies.
	// The emulator is served on Addr as well, for other clients. It has
	// no effect on an external endpoint.
	InProcess bool

	// Now is the clock the embedded emulator uses for the
	// ClientRequestToken window. Nil selects time.Now. Tests inject a fake
	// clock to step past the window.
	Now func() time.Time
}

func resolveOptions(optFns []func(*Options)) Options {
	var o Options
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// clientFor returns the HTTP client of the SDK clients: base (nil for the
// SDK's default) behind the configured Latency, if any.
func (o Options) clientFor(base aws.HTTPClient) aws.HTTPClient {
	if o.Latency == nil {
		return base
	}
	return newLatencyClient(base, *o.Latency)
}
