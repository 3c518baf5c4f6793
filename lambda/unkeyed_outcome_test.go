package lambda_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/internal/ddbtest"
	idemlambda "github.com/idemkey/idemkey/lambda"
)

// TestUnkeyedCommitOfUnknownOutcomeIsTheHTTPAnswerOnEachFrontDoor: the
// Lambda front doors answer an unguarded request whose writes may have
// landed as the HTTP middleware does, with a status no retrying client
// resends.
func TestUnkeyedCommitOfUnknownOutcomeIsTheHTTPAnswerOnEachFrontDoor(t *testing.T) {
	e := newEnv(t)
	p := newPayments(e) // one for every door: each execution stages an item of its own
	defer p.unblock()
	for i, d := range doors {
		t.Run(d.name, func(t *testing.T) {
			faulty := ddbtest.NewFaulty(e.client)
			faulty.Plan("TransactWriteItems", ddbtest.FailAfter)
			store := dynamostore.New(faulty, e.keys, func(o *dynamostore.Options) { o.Now, o.Lease, o.Retention = e.clock.Now, time.Minute, time.Hour })
			h := idemlambda.Middleware(store, func(o *idemlambda.MiddlewareOptions) {
				o.Handler.Methods = []string{http.MethodPatch} // the samples' methods are not guarded
				o.Handler.SingleCaller = d.singleCaller
				o.Handler.Logger = slog.New(slog.DiscardHandler)
				if d.scopeOpts != nil {
					d.scopeOpts(&o.Scope)
				}
			})(p)
			r := d.invoke(t, context.Background(), h, sample(t, d.sample), call{})
			assertProblem(t, r, http.StatusInternalServerError, "outcome-unknown")
			assert.Empty(t, r.header.Get("Retry-After"))
			assert.EqualValues(t, i+1, p.executed.Load())
		})
	}
	assert.Equal(t, len(doors), e.effectsFor(""), "each door's write landed once")
}
