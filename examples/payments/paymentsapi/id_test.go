package paymentsapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIDsSortByTheirMillisecond(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	for i := range 200 {
		a, b := newID(t0.Add(time.Duration(i)*time.Millisecond)), newID(t0.Add(time.Duration(i+1)*time.Millisecond))
		require.Less(t, a, b)
		require.Regexp(t, `^pay_[0-9a-v]{10}[a-z2-7]{16}$`, a)
	}
}

func TestProblemBaseIsTheDocumentedPrefix(t *testing.T) {
	assert.Equal(t, exampleProblems, ProblemBase)
}
