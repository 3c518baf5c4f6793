package handler_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/idemkey/idemkey/handler"
)

func TestLeaseFromDeadlineFollowsTheRequestContext(t *testing.T) {
	lease := handler.LeaseFromDeadline(5 * time.Second)
	req := httptest.NewRequest("POST", "/", nil)
	assert.Zero(t, lease(req), "no deadline: the store's default")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := lease(req.WithContext(ctx))
	assert.Greater(t, got, 14*time.Second)
	assert.LessOrEqual(t, got, 15*time.Second, "the time left plus the margin")
}
