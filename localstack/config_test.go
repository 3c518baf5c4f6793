package localstack

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// loadConfig is LoadConfig that fails the test on an error.
func loadConfig(t *testing.T, endpoint string, optFns ...func(*config.LoadOptions) error) (cfgEndpoint, region string, creds func() (string, error)) {
	t.Helper()
	cfg, err := LoadConfig(context.Background(), endpoint, optFns...)
	if err != nil {
		t.Fatalf("LoadConfig(%q): %v", endpoint, err)
	}
	if cfg.BaseEndpoint != nil {
		cfgEndpoint = *cfg.BaseEndpoint
	}
	return cfgEndpoint, cfg.Region, func() (string, error) {
		c, err := cfg.Credentials.Retrieve(context.Background())
		return c.AccessKeyID, err
	}
}

func TestLoadConfigGivesALoopbackEndpointWithoutCredentialsTheLocalOnes(t *testing.T) {
	isolateAWSEnv(t)
	for _, ep := range []string{"http://127.0.0.1:8000", "http://127.9.9.9:8000", "http://localhost:4566", "http://[::1]:8000", "https://LOCALHOST"} {
		got, region, creds := loadConfig(t, ep)
		if got != ep || region != DefaultRegion {
			t.Errorf("%s: BaseEndpoint %q, region %q; want %q, %q", ep, got, region, ep, DefaultRegion)
		}
		if key, err := creds(); err != nil || key != LocalAccessKeyID {
			t.Errorf("%s: access key %q (%v), want the local %q", ep, key, err, LocalAccessKeyID)
		}
	}
}

func TestLoadConfigNeverGivesANonLoopbackEndpointDummyCredentials(t *testing.T) {
	isolateAWSEnv(t)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true") // no instance role off AWS either
	for _, ep := range []string{"http://192.0.2.1:8000", "http://dynamodb-local:8000", "https://dynamodb.eu-west-1.amazonaws.com", "http://127.0.0.1.example:8000"} {
		got, _, creds := loadConfig(t, ep)
		if got != ep {
			t.Errorf("%s: BaseEndpoint %q", ep, got)
		}
		if key, err := creds(); err == nil {
			t.Errorf("%s: credentials found (access key %q), want none", ep, key)
		}
	}
}

func TestLoadConfigKeepsConfiguredCredentialsAndRegionForALoopbackEndpoint(t *testing.T) {
	isolateAWSEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDCONFIGURED")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "eu-west-1")
	_, region, creds := loadConfig(t, "http://127.0.0.1:8000")
	if key, err := creds(); err != nil || key != "AKIDCONFIGURED" {
		t.Errorf("access key %q (%v), want the configured AKIDCONFIGURED", key, err)
	}
	if region != "eu-west-1" {
		t.Errorf("region %q, want eu-west-1", region)
	}
	if _, region, _ := loadConfig(t, "http://127.0.0.1:8000", config.WithRegion("ap-south-1")); region != "ap-south-1" {
		t.Errorf("region %q, want the option's ap-south-1", region)
	}
}

func TestLoadConfigWithoutAnEndpointTakesTheSDKsOne(t *testing.T) {
	isolateAWSEnv(t)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	got, region, creds := loadConfig(t, "")
	if got != "" || region != "" {
		t.Errorf("no endpoint configured: BaseEndpoint %q, region %q; want none (AWS itself, the SDK's region)", got, region)
	}
	if key, err := creds(); err == nil {
		t.Errorf("AWS itself got credentials (access key %q), want none", key)
	}

	for _, name := range []string{EndpointEnv, "AWS_ENDPOINT_URL"} {
		t.Run(name, func(t *testing.T) {
			isolateAWSEnv(t)
			t.Setenv(name, "http://localhost:8000")
			got, region, creds := loadConfig(t, "")
			if got != "http://localhost:8000" || region != DefaultRegion {
				t.Errorf("BaseEndpoint %q, region %q; want the variable's, %s", got, region, DefaultRegion)
			}
			if key, err := creds(); err != nil || key != LocalAccessKeyID {
				t.Errorf("access key %q (%v), want the local one", key, err)
			}
		})
	}
}

func TestLoadConfigRefusesAnEndpointThatIsNotAnHTTPURL(t *testing.T) {
	isolateAWSEnv(t)
	for _, ep := range []string{"127.0.0.1:8000", "ftp://127.0.0.1", "http://"} {
		if _, err := LoadConfig(context.Background(), ep); err == nil || !strings.Contains(err.Error(), "not an absolute http or https URL") {
			t.Errorf("LoadConfig(%q) = %v, want an error naming the URL", ep, err)
		}
	}
}

func TestAClientFromLoadConfigReachesALoopbackEndpointWithoutCredentials(t *testing.T) {
	e := embedded(t)
	isolateAWSEnv(t)
	cfg, err := LoadConfig(context.Background(), e.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := dynamodb.NewFromConfig(cfg)
	createTable(t, c, "t", "")
	if !tableExists(t, e.Client, "t") {
		t.Error("the table created through the LoadConfig client is not on the endpoint")
	}
}
