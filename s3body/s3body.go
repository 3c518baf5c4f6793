// Package s3body keeps the bodies of large stored responses in Amazon S3:
// it is the dynamostore.BodyStore of dynamostore.Options.Bodies and
// dynamostore.SweepOptions.Bodies. It moves bytes and nothing else: the
// Store names each object after its record and checks the size and SHA-256
// of what it reads back. It is not a general S3 client.
//
// Costs, encryption, the bucket's lifecycle rule and the IAM statements
// are in docs/large-responses.md.
package s3body

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/idemkey/idemkey/dynamostore"
)

// Client is the set of S3 calls a Store makes. *s3.Client satisfies it;
// tests wrap it to count calls or inject faults.
type Client interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

var _ Client = (*s3.Client)(nil)

// DefaultPrefix is the default Options.Prefix.
const DefaultPrefix = "idemkey/bodies/"

// Options configure a Store.
type Options struct {
	// Prefix starts every object key (default DefaultPrefix). The bucket's
	// lifecycle rule and the IAM statements name it.
	Prefix string
	// KMSKeyID, when set, encrypts every object with SSE-KMS under this
	// key (an ID, alias or ARN); otherwise objects use SSE-S3 (AES256).
	KMSKeyID string
}

// Store is a dynamostore.BodyStore over one bucket. It is safe for
// concurrent use.
type Store struct {
	client Client
	bucket string
	opts   Options
}

var _ dynamostore.BodyStore = (*Store)(nil)

// New returns a Store over bucket. It panics if client is nil or bucket is
// empty: a configuration error, caught at start.
func New(client Client, bucket string, optFns ...func(*Options)) *Store {
	if client == nil || bucket == "" {
		panic("s3body: New needs an S3 client and a bucket name")
	}
	s := &Store{client: client, bucket: bucket}
	for _, fn := range optFns {
		fn(&s.opts)
	}
	if s.opts.Prefix == "" {
		s.opts.Prefix = DefaultPrefix
	}
	return s
}

// Bucket returns the bucket name.
func (s *Store) Bucket() string { return s.bucket }

// Options returns the store's effective options.
func (s *Store) Options() Options { return s.opts }

// PutBody writes body under Prefix + key, encrypted (SSE-S3, or SSE-KMS
// with KMSKeyID), with its length as Content-Length; S3 acknowledges it
// once it is stored.
func (s *Store) PutBody(ctx context.Context, key string, body []byte) error {
	in := &s3.PutObjectInput{
		Bucket: &s.bucket, Key: aws.String(s.opts.Prefix + key), Body: bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))), ServerSideEncryption: types.ServerSideEncryptionAes256,
	}
	if s.opts.KMSKeyID != "" {
		in.ServerSideEncryption, in.SSEKMSKeyId = types.ServerSideEncryptionAwsKms, &s.opts.KMSKeyID
	}
	_, err := s.client.PutObject(ctx, in)
	return err
}

// GetBody opens the object under Prefix + key. A missing object (S3's
// NoSuchKey, or a 404) is an error matching fs.ErrNotExist.
func (s *Store) GetBody(ctx context.Context, key string) (io.ReadCloser, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.opts.Prefix + key)})
	var api smithy.APIError
	if errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound") {
		return nil, fmt.Errorf("s3body: object %s: %w", key, fs.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	return out.Body, nil
}

// DeleteBody deletes the object under Prefix + key (S3 answers a delete of
// a missing object with success).
func (s *Store) DeleteBody(ctx context.Context, key string) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.opts.Prefix + key)})
	return err
}
