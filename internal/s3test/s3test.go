// Package s3test gives tests an S3 endpoint and a fresh bucket: the one
// AWS_ENDPOINT_URL_S3 names when it is set (moto, the same server as
// AWS_ENDPOINT_URL_DYNAMODB; the SDK's own variable, as package localstack
// reads DynamoDB's), otherwise an embedded gofakes3 in-memory server on
// loopback.
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// ForTest returns a client of the test's S3 endpoint, with optFns applied,
// and the name of a new, empty bucket whose objects and itself are deleted
// when the test ends.
func ForTest(tb testing.TB, optFns ...func(*s3.Options)) (*s3.Client, string) {
	tb.Helper()
	endpoint, kind := os.Getenv("AWS_ENDPOINT_URL_S3"), "external"
	if endpoint == "" {
		srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
		tb.Cleanup(srv.Close)
		endpoint, kind = srv.URL, "embedded"
	}
	tb.Logf("s3test: using the %s S3 endpoint %s", kind, endpoint)
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	client := s3.New(s3.Options{
		Region: region, BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	}, optFns...)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	bucket := "idemkey-test-" + hex.EncodeToString(b)
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		tb.Fatalf("s3test: CreateBucket: %v", err)
	}
	tb.Cleanup(func() {
		out, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket})
		if err == nil {
			for _, o := range out.Contents {
				_, _ = client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: o.Key})
			}
		}
		_, _ = client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &bucket})
	})
	return client, bucket
}

// Keys returns the keys of the bucket's objects.
func Keys(tb testing.TB, client *s3.Client, bucket string) []string {
	tb.Helper()
	out, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: &bucket})
	if err != nil {
		tb.Fatalf("s3test: ListObjectsV2: %v", err)
	}
	keys := []string{}
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}
