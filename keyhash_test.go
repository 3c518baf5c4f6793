package idemkey_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey"
)

// A KeyHash in a log or a trace must not let its reader confirm a
// guessed key: an unkeyed hash of the key is confirmed by hashing the
// guess. The hash is keyed by the Guard's secret (random by default) and
// names the record (scope and key), so two tenants' "k" differ too.
func TestKeyHashIsKeyedAndNamesTheRecord(t *testing.T) {
	hashOf := func(g *idemkey.Guard, rec *recorder, r idemkey.Request) string {
		t.Helper()
		_, err := g.Do(context.Background(), r, ok("x"))
		require.NoError(t, err)
		e := rec.last(t)
		return e.KeyHash()
	}
	rec1, rec2 := &recorder{}, &recorder{}
	g1 := newGuard(t, func(o *idemkey.Options) { o.Observer = rec1 })
	g2 := newGuard(t, func(o *idemkey.Options) { o.Observer = rec2 })

	guess := sha256.Sum256([]byte("order-1"))
	h1 := hashOf(g1, rec1, req("order-1"))
	assert.NotEqual(t, hex.EncodeToString(guess[:8]), h1, "the SHA-256 of a guessed key confirms nothing")
	assert.Len(t, h1, 16)
	assert.Equal(t, h1, hashOf(g1, rec1, req("order-1")), "one Guard: one record, one hash (its replay)")
	assert.NotEqual(t, h1, hashOf(g2, rec2, req("order-1")), "another Guard's random secret")

	other := req("order-1")
	other.Scope = "another-tenant"
	assert.NotEqual(t, h1, hashOf(g1, rec1, other), "another scope's key of the same text")

	secret := []byte("a fleet-wide secret of 32 bytes!")
	rec3, rec4 := &recorder{}, &recorder{}
	g3 := newGuard(t, func(o *idemkey.Options) { o.Observer, o.KeyHashSecret = rec3, secret })
	g4 := newGuard(t, func(o *idemkey.Options) { o.Observer, o.KeyHashSecret = rec4, secret })
	assert.Equal(t, hashOf(g3, rec3, req("order-2")), hashOf(g4, rec4, req("order-2")), "one secret: hashes agree across Guards")

	assert.Panics(t, func() {
		newGuard(t, func(o *idemkey.Options) { o.KeyHashSecret = []byte("short") })
	}, "a secret shorter than MinKeyHashSecret is refused")
}
