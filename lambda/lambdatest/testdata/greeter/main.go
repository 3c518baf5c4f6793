// Command greeter is a Lambda function for the tests and the example of
// package lambdatest: it greets the name of its event.
package main

import (
	"context"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type event struct {
	Name  string `json:"name"`
	Sleep string `json:"sleep,omitempty"` // a Go duration to wait before answering
	Panic bool   `json:"panic,omitempty"`
}

type greeting struct {
	Greeting   string `json:"greeting"`
	Function   string `json:"function,omitempty"`
	ARN        string `json:"arn,omitempty"`
	RemainingS int64  `json:"remaining_s,omitempty"`
}

// NoNameError is the error for an event without a name.
type NoNameError struct{}

func (*NoNameError) Error() string { return "no name to greet" }

func greet(ctx context.Context, e event) (greeting, error) {
	if e.Sleep != "" {
		d, err := time.ParseDuration(e.Sleep)
		if err != nil {
			return greeting{}, err
		}
		time.Sleep(d)
	}
	if e.Panic {
		panic("asked to panic")
	}
	if e.Name == "" {
		return greeting{}, &NoNameError{}
	}
	g := greeting{Greeting: "hello, " + e.Name}
	if e.Name == "me" {
		lc, _ := lambdacontext.FromContext(ctx)
		deadline, _ := ctx.Deadline()
		g.Function, g.ARN = lambdacontext.FunctionName, lc.InvokedFunctionArn
		g.RemainingS = int64(time.Until(deadline).Round(time.Second) / time.Second)
	}
	return g, nil
}

func main() { lambda.Start(greet) }
