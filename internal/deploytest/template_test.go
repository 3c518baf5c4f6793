package deploytest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/dynamostore"
)

func TestKeyTableMatchesTheLibrary(t *testing.T) {
	tpl, err := Load()
	require.NoError(t, err)
	assert.Equal(t, "AWS::DynamoDB::Table", tpl.Type("KeyTable"))
	assert.Equal(t, dynamostore.TTLAttribute, tpl.Scalar("KeyTable", "Properties", "TimeToLiveSpecification", "AttributeName"))
	assert.Equal(t, "true", tpl.Scalar("KeyTable", "Properties", "TimeToLiveSpecification", "Enabled"))
	assert.Equal(t, "PAY_PER_REQUEST", tpl.Scalar("KeyTable", "Properties", "BillingMode"))
	assert.Equal(t, "true", tpl.Scalar("KeyTable", "Properties", "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled"))
	keys := tpl.Path("KeyTable", "Properties", "KeySchema")
	require.NotNil(t, keys)
	require.Len(t, keys.Content, 1, "one partition key, no sort key")
	assert.Equal(t, dynamostore.PartitionKey, get(keys.Content[0], "AttributeName").Value)
	assert.Equal(t, "HASH", get(keys.Content[0], "KeyType").Value)
}

func TestSweeperRunsEveryFiveMinutesWithAnAlarmOnEvictionLag(t *testing.T) {
	tpl, err := Load()
	require.NoError(t, err)
	assert.Equal(t, "rate(5 minutes)", tpl.Scalar("SweeperFunction", "Properties", "Events", "Every5Minutes", "Properties", "Schedule"))
	assert.Equal(t, "EvictionLagSeconds", tpl.Scalar("EvictionLagAlarm", "Properties", "MetricName"))
	assert.Equal(t, "idemkey", tpl.Scalar("EvictionLagAlarm", "Properties", "Namespace"))
	assert.Equal(t, "breaching", tpl.Scalar("EvictionLagAlarm", "Properties", "TreatMissingData"), "a sweeper that stops reporting must alarm too")
}

func TestEveryGrantNamesOneTable(t *testing.T) {
	tpl, err := Load()
	require.NoError(t, err)
	for _, fn := range []string{"PaymentsFunction", "SweeperFunction"} {
		grants, err := tpl.Actions(fn)
		require.NoError(t, err, fn)
		for target := range grants {
			assert.Equal(t, "AWS::DynamoDB::Table", tpl.Type(target), "%s grants on %s", fn, target)
		}
	}
}
