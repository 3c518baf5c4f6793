package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/localstack"
)

func TestDemoCreatesOnePaymentForTwoCallsWithOneKey(t *testing.T) {
	var out, errs bytes.Buffer
	keys, payments := localstack.TableName("keys"), localstack.TableName("payments")
	err := run(context.Background(), []string{"-demo", "-key-table", keys, "-payment-table", payments}, &out, &errs)
	require.NoError(t, err, errs.String())
	assert.Equal(t, "call 1: amount=1250 currency=EUR replayed=false\n"+
		"call 2: amount=1250 currency=EUR replayed=true\n"+
		"same payment: true; payments of alice: 1\n", out.String())
}

func TestHelpExitsCleanly(t *testing.T) {
	var errs bytes.Buffer
	err := run(context.Background(), []string{"-h"}, &bytes.Buffer{}, &errs)
	assert.ErrorContains(t, err, "help requested")
	assert.Contains(t, errs.String(), "-demo")
}
