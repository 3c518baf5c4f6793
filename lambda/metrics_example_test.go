package lambda_test

import (
	"context"
	"os"
	"time"

	"github.com/idemkey/idemkey"
	idemlambda "github.com/idemkey/idemkey/lambda"
)

// Metrics is the Guard's Observer; each invocation of a front door writes
// one EMF line to stdout, which CloudWatch Logs turns into metrics. Here
// one event outside an invocation, with a fixed clock, shows a line.
func ExampleNewMetrics() {
	metrics := idemlambda.NewMetrics(os.Stdout, func(o *idemlambda.MetricsOptions) {
		o.FunctionName = "payments"
		o.Now = func() time.Time { return time.UnixMilli(1_800_000_000_000) }
	})
	// In a function: idemlambda.Middleware(store, func(o *idemlambda.MiddlewareOptions) {
	//	o.Handler.Guard.Observer = metrics
	// })
	metrics.Observe(context.Background(), idemkey.Event{
		Outcome: idemkey.OutcomeReplay, Mode: idemkey.ClaimFirst, FrontDoor: idemkey.FrontDoorLambdaAPIGWv2,
		Phases: idemkey.PhaseClaim, Claim: 4500 * time.Microsecond, StoreCalls: 1,
	})
	// Output:
	// {"_aws":{"Timestamp":1800000000000,"CloudWatchMetrics":[{"Namespace":"idemkey","Dimensions":[["FunctionName"]],"Metrics":[{"Name":"Requests","Unit":"Count"},{"Name":"ExecutedStored","Unit":"Count"},{"Name":"ExecutedReleased","Unit":"Count"},{"Name":"Replay","Unit":"Count"},{"Name":"ReplayFromCache","Unit":"Count"},{"Name":"InFlight","Unit":"Count"},{"Name":"Mismatch","Unit":"Count"},{"Name":"LockLost","Unit":"Count"},{"Name":"Unavailable","Unit":"Count"},{"Name":"Permanent","Unit":"Count"},{"Name":"EffectConditionFailed","Unit":"Count"},{"Name":"Invalid","Unit":"Count"},{"Name":"CorruptRecord","Unit":"Count"},{"Name":"UnkeyedCommitted","Unit":"Count"},{"Name":"Error","Unit":"Count"},{"Name":"StoreCalls","Unit":"Count"},{"Name":"StagedActions","Unit":"Count"},{"Name":"ClaimDuration","Unit":"Milliseconds"}]}]},"FunctionName":"payments","Requests":1,"ExecutedStored":0,"ExecutedReleased":0,"Replay":1,"ReplayFromCache":0,"InFlight":0,"Mismatch":0,"LockLost":0,"Unavailable":0,"Permanent":0,"EffectConditionFailed":0,"Invalid":0,"CorruptRecord":0,"UnkeyedCommitted":0,"Error":0,"StoreCalls":1,"StagedActions":0,"ClaimDuration":4.5,"FrontDoor":"lambda-apigw-v2","Mode":"claim-first"}
}
