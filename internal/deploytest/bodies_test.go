package deploytest

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/s3body"
)

// maxLease is the longest lease LeaseSeconds allows.
const maxLease = time.Hour

// bodyRule returns the lifecycle rule of the bodies bucket for params
// (nil when the bucket is not created).
func bodyRule(t *testing.T, tpl Template, params Params) map[string]any {
	t.Helper()
	rules, err := tpl.Property(params, "BodyBucket", "Properties", "LifecycleConfiguration", "Rules")
	require.NoError(t, err)
	if rules == NoValue {
		return nil
	}
	list := rules.([]any)
	require.Len(t, list, 1)
	return list[0].(map[string]any)
}

func TestBodiesBucketOnlyWithLargeResponseBodiesAndItsRuleOutlivesEveryRecord(t *testing.T) {
	tpl, err := Load()
	require.NoError(t, err)
	assert.Nil(t, bodyRule(t, tpl, Params{}), "off by default: no bucket")
	block, err := tpl.Property(Params{"LargeResponseBodies": "s3"}, "BodyBucket", "Properties", "PublicAccessBlockConfiguration")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"BlockPublicAcls": "true", "BlockPublicPolicy": "true", "IgnorePublicAcls": "true", "RestrictPublicBuckets": "true"}, block)
	assert.Error(t, tpl.Check(Params{"LargeResponseBodies": "s3", "RetentionHours": "0"}), "no retention the rule could undercut")
	for _, hours := range []int{1, 2, 23, 24, 25, 168, 720, 8760} {
		params := Params{"LargeResponseBodies": "s3", "RetentionHours": strconv.Itoa(hours)}
		require.NoError(t, tpl.Check(params))
		rule := bodyRule(t, tpl, params)
		require.NotNil(t, rule)
		assert.Equal(t, s3body.DefaultPrefix, rule["Prefix"])
		days, err := strconv.Atoi(rule["ExpirationInDays"].(string))
		require.NoError(t, err)
		// A record lives at most Retention plus its lease after the write
		// of its object; S3 expires an object at the midnight after its
		// days are up, never before.
		assert.Greater(t, time.Duration(days)*24*time.Hour, time.Duration(hours)*time.Hour+maxLease,
			"RetentionHours %d: the rule must not delete a live record's body", hours)
	}
}

func TestBodiesStackHasAnEncryptedPrivateBucketAndGrantsOnItsPrefix(t *testing.T) {
	ctx := context.Background()
	s := ForTest(t, map[string]string{"LargeResponseBodies": "s3", "RetentionHours": "48"})
	bucket := s.Resources["BodyBucket"]
	require.NotEmpty(t, bucket, "the stack built the bodies bucket")
	client := s3.NewFromConfig(s.Config, func(o *s3.Options) { o.UsePathStyle = true })

	enc, err := client.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: &bucket})
	require.NoError(t, err)
	require.NotEmpty(t, enc.ServerSideEncryptionConfiguration.Rules)
	assert.Equal(t, s3types.ServerSideEncryptionAes256, enc.ServerSideEncryptionConfiguration.Rules[0].ApplyServerSideEncryptionByDefault.SSEAlgorithm)

	// moto 5's CloudFormation leaves the public access block and the
	// lifecycle rule out of the bucket (NoSuchPublicAccessBlockConfiguration,
	// NoSuchLifecycleConfiguration): the static test above checks them.

	objects := "arn:aws:s3:::" + bucket + "/" + s3body.DefaultPrefix + "*"
	for fn, want := range map[string][]string{
		"PaymentsFunction": {"s3:DeleteObject", "s3:GetObject", "s3:PutObject"},
		"SweeperFunction":  {"s3:DeleteObject"},
	} {
		stmts, _, err := s.Policy(ctx, fn)
		require.NoError(t, err)
		var got []string
		for _, st := range stmts {
			for _, a := range st.Actions {
				if len(a) > 3 && a[:3] == "s3:" {
					assert.Equal(t, []string{objects}, st.Resources, "%s: %s only on the bodies prefix", fn, a)
					got = append(got, a)
				}
			}
		}
		slices.Sort(got)
		assert.Equal(t, want, got, fn)
		env, err := s.Environment(ctx, fn)
		require.NoError(t, err)
		assert.Equal(t, bucket, env["BODY_BUCKET"], fn)
	}
}
