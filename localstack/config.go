package localstack

import (
	"context"
	"fmt"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// LoadConfig loads config.LoadDefaultConfig's configuration, with optFns,
// for DynamoDB clients of endpoint, or of the endpoint the SDK resolves
// from it (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, endpoint_url) when
// endpoint is empty. With neither, the configuration is the SDK's as it is.
// Otherwise the endpoint must be an absolute http or https URL and becomes
// BaseEndpoint, and the region defaults to DefaultRegion. When its host is
// loopback ("localhost", 127.0.0.0/8, ::1), the EC2 instance metadata
// service is not consulted, LocalAccessKeyID and LocalSecretAccessKey are
// used when the chain yields no credentials (configured ones are kept), and
// the clients built from the configuration send one request at a time
// between them (local implementations such as moto do not isolate
// concurrent requests). A non-loopback endpoint never gets the dummy
// credentials. LoadConfig does not contact the endpoint.
//
// AWS_ENDPOINT_URL_DYNAMODB takes precedence over a configuration's
// BaseEndpoint; a client that must reach this endpoint whatever the
// environment says pins it in its own options.
func LoadConfig(ctx context.Context, endpoint string, optFns ...func(*config.LoadOptions) error) (aws.Config, error) {
	load := func(loopback bool) (aws.Config, error) {
		opts := optFns[:len(optFns):len(optFns)]
		if loopback {
			// Probing instance metadata off-host only slows this down.
			opts = append(opts, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
		}
		cfg, err := config.LoadDefaultConfig(ctx, opts...)
		if err != nil {
			return aws.Config{}, fmt.Errorf("localstack: loading the AWS configuration: %w", err)
		}
		return cfg, nil
	}
	cfg, err := load(false)
	if err != nil {
		return aws.Config{}, err
	}
	if endpoint == "" {
		resolved := dynamodb.NewFromConfig(cfg).Options().BaseEndpoint
		if resolved == nil || *resolved == "" {
			return cfg, nil // AWS itself
		}
		endpoint = *resolved
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return aws.Config{}, fmt.Errorf("localstack: DynamoDB endpoint %q is not an absolute http or https URL", endpoint)
	}
	loopback := isLoopback(u.Hostname())
	if loopback {
		if cfg, err = load(true); err != nil {
			return aws.Config{}, err
		}
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	cfg.BaseEndpoint = aws.String(endpoint)
	if loopback {
		if !hasCredentials(ctx, cfg) {
			cfg.Credentials = credentials.NewStaticCredentialsProvider(LocalAccessKeyID, LocalSecretAccessKey, "")
		}
		cfg.APIOptions = append(cfg.APIOptions, newOneAtATime().install)
	}
	return cfg, nil
}
