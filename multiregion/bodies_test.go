package multiregion_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/multiregion"
)

// unreplicatedBodies is a BodyStore New must refuse before any call.
type unreplicatedBodies struct{}

func (unreplicatedBodies) PutBody(context.Context, string, []byte) error { return errors.New("called") }
func (unreplicatedBodies) GetBody(context.Context, string) (io.ReadCloser, error) {
	return nil, errors.New("called")
}
func (unreplicatedBodies) DeleteBody(context.Context, string) error { return errors.New("called") }

func TestAStoreWithABodyStoreIsRefusedAcrossRegions(t *testing.T) {
	withBodies := func(o *dynamostore.Options) { o.Bodies = unreplicatedBodies{} }
	client := func(region string) *dynamodb.Client { return dynamodb.New(dynamodb.Options{Region: region}) }
	for _, mode := range []multiregion.Mode{multiregion.HomeRegion, multiregion.Strong} {
		_, err := multiregion.New([]multiregion.Region{
			multiregion.NewRegion("eu-west-1", client("eu-west-1"), "keys", withBodies),
			multiregion.NewRegion("us-east-1", client("us-east-1"), "keys", withBodies),
		}, func(o *multiregion.Options) {
			o.Mode, o.Eviction, o.Effects = mode, multiregion.EvictBySweeper, multiregion.EffectsKeyed
		})
		var ce *multiregion.ConfigError
		require.ErrorAs(t, err, &ce, mode.String())
		assert.Contains(t, ce.Reason, "BodyStore")
	}
	_, err := multiregion.New([]multiregion.Region{{Name: "local", Store: dynamostore.New(client("eu-west-1"), "keys", withBodies)}})
	assert.NoError(t, err, "one region: its bodies are where its records are")
}
