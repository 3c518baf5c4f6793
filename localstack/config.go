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

// LoadConfig loads the AWS SDK configuration for DynamoDB clients of
// endpoint, by the rule Start applies to an external endpoint, so that
// tests, scripts and commands reach a local DynamoDB implementation alike:
//
//   - The configuration is config.LoadDefaultConfig's with optFns applied
//     (environment, shared files, instance roles).
//   - The endpoint is endpoint when it is not empty, otherwise the one the
//     SDK resolves for DynamoDB from that configuration
//     (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, a shared
//     configuration's endpoint_url). It must be an absolute http or https
//     URL, and it becomes the configuration's BaseEndpoint. With neither,
//     BaseEndpoint stays nil (clients talk to AWS) and nothing below
//     applies: the region and credentials are exactly the SDK's.
//   - With an endpoint, the region is DefaultRegion when none is
//     configured.
//   - When the endpoint's host is loopback ("localhost", 127.0.0.0/8 or
//     ::1), the EC2 instance metadata service is not consulted, and when
//     the credential chain then yields no credentials, the credentials are
//     the static LocalAccessKeyID and LocalSecretAccessKey: a local
//     emulator needs some and accepts any. Credentials that are configured
//     are kept. A non-loopback endpoint never gets these dummy credentials.
//   - The clients of a loopback endpoint built from the configuration send
//     one request at a time between them, as Start describes.
//
// LoadConfig does not contact the endpoint. The SDK lets
// AWS_ENDPOINT_URL_DYNAMODB take precedence over a configuration's
// BaseEndpoint, so a client that must reach an explicit endpoint whatever
// the environment says pins it in its own options:
// dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = cfg.BaseEndpoint }).
func LoadConfig(ctx context.Context, endpoint string, optFns ...func(*config.LoadOptions) error) (aws.Config, error) {
	load := func(loopback bool) (aws.Config, error) {
		opts := optFns[:len(optFns):len(optFns)]
		if loopback {
			// Instance metadata cannot matter to a local emulator, and
			// probing for it off-host only slows the credential check down.
			opts = append(opts, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
		}
		cfg, err := config.LoadDefaultConfig(ctx, opts...)
		if err != nil {
			return aws.Config{}, fmt.Errorf("localstack: loading the AWS configuration: %w", err)
		}
		return cfg, nil
	}
	explicit := endpoint != ""
	cfg, err := load(explicit && isLoopbackURL(endpoint))
	if err != nil {
		return aws.Config{}, err
	}
	if !explicit {
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
	if loopback && !explicit {
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

// isLoopbackURL reports whether raw is a URL whose host is loopback.
func isLoopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && isLoopback(u.Hostname())
}
