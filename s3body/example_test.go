package s3body_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/localstack"
	"github.com/idemkey/idemkey/s3body"
)

// A 1 MiB response does not fit a DynamoDB item: with a body store it goes
// to S3 before the commit, and the retry gets it back whole. (Here S3 is an
// in-memory server; in a service, s3.NewFromConfig(cfg).)
func ExampleNew() {
	ctx := context.Background()
	ep, err := localstack.Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	defer srv.Close()
	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bodies")}); err != nil {
		log.Fatal(err)
	}
	table := localstack.TableName("keys")
	if err := dynamostore.EnsureTable(ctx, ep.Client, table, 0); err != nil {
		log.Fatal(err)
	}
	guard := idemkey.New(dynamostore.New(ep.Client, table, func(o *dynamostore.Options) {
		o.Bodies = s3body.New(client, "bodies")
	}))

	report := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	sum := sha256.Sum256([]byte("GET report 7"))
	req := idemkey.Request{Scope: "tenant-a", Key: "report-7", Method: "POST", Path: "/reports", Fingerprint: sum[:]}
	for range 2 {
		res, err := guard.Do(ctx, req, func(ctx context.Context) (idemkey.Response, error) {
			return idemkey.Response{Status: 200, Body: report}, nil
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("replayed", res.Replayed, "body", len(res.Response.Body), "bytes, identical:", bytes.Equal(res.Response.Body, report))
	}
	out, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bodies")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("objects:", len(out.Contents))
	// Output:
	// replayed false body 1048576 bytes, identical: true
	// replayed true body 1048576 bytes, identical: true
	// objects: 1
}
