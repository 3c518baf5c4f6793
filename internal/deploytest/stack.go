package deploytest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// EndpointEnv names the environment variable that holds the URL of a moto
// server (moto_server, 5.2.1): the stack tests create the template's
// stacks on its CloudFormation and read what it built through its
// DynamoDB, Lambda, IAM, EventBridge, CloudWatch and Logs APIs. Unset, the
// stack tests skip; .ci/run sets it and fails when a stack test skips.
const EndpointEnv = "IDEMKEY_DEPLOY_ENDPOINT"

// DistEnv names the environment variable that holds the directory
// scripts/build-lambda.sh wrote (payments.zip, sweeper.zip, and the
// bootstrap binaries beside them): the code the stacks deploy.
const DistEnv = "IDEMKEY_DEPLOY_DIST"

// CodeBucket is the S3 bucket on moto the functions' zips are uploaded to,
// as sam deploy uploads them before it creates the stack.
const CodeBucket = "idemkey-deploy-code"

// Region is the region the stacks are created in.
const Region = "us-east-1"

// Stack is a stack of template.yaml created on moto.
type Stack struct {
	// Name is the stack's name.
	Name string
	// Resources maps each logical id to its physical id.
	Resources map[string]string
	// Unbuilt maps the logical ids of the resources moto cannot build (left
	// out of the stack, see samtranslate.py) to their types.
	Unbuilt map[string]string
	// Config is the configuration of clients of the moto server.
	Config aws.Config
}

// translated is samtranslate.py's output.
type translated struct {
	Template json.RawMessage   `json:"template"`
	Unbuilt  map[string]string `json:"unbuilt"`
}

// Root is the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Translate runs the SAM translator on a template (a path from the
// repository's root) and returns the CloudFormation template moto builds
// and the resources left out of it.
func Translate(template string) (json.RawMessage, map[string]string, error) {
	cmd := exec.Command("python3", filepath.Join(Root(), "internal", "deploytest", "samtranslate.py"),
		filepath.Join(Root(), template), CodeBucket, Region)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("samtranslate.py %s: %v: %s", template, err, stderr.String())
	}
	var tr translated
	if err := json.Unmarshal(out, &tr); err != nil {
		return nil, nil, fmt.Errorf("samtranslate.py %s: %w", template, err)
	}
	return tr.Template, tr.Unbuilt, nil
}

// MotoConfig returns the configuration of clients of the moto server at
// endpoint, with static credentials.
func MotoConfig(endpoint string) aws.Config {
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider("moto", "moto", ""),
		BaseEndpoint: aws.String(endpoint),
	}
}

// Deploy uploads the zips of dist to CodeBucket and creates the stack name
// from template (a path from the repository's root) with the parameters,
// waiting until CloudFormation has created it.
func Deploy(ctx context.Context, cfg aws.Config, dist, template, name string, params map[string]string) (*Stack, error) {
	body, unbuilt, err := Translate(template)
	if err != nil {
		return nil, err
	}
	if err := uploadCode(ctx, cfg, dist); err != nil {
		return nil, err
	}
	cf := cloudformation.NewFromConfig(cfg)
	var ps []cfntypes.Parameter
	for k, v := range params {
		ps = append(ps, cfntypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(v)})
	}
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{
		StackName:    aws.String(name),
		TemplateBody: aws.String(string(body)),
		Parameters:   ps,
		Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityIam},
	}); err != nil {
		return nil, fmt.Errorf("create stack %s: %w", name, err)
	}
	w := cloudformation.NewStackCreateCompleteWaiter(cf, func(o *cloudformation.StackCreateCompleteWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, time.Second
	})
	if err := w.Wait(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)}, 2*time.Minute); err != nil {
		return nil, fmt.Errorf("stack %s: %w", name, err)
	}
	out, err := cf.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(name)})
	if err != nil {
		return nil, err
	}
	s := &Stack{Name: name, Resources: map[string]string{}, Unbuilt: unbuilt, Config: cfg}
	for _, r := range out.StackResources {
		s.Resources[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.PhysicalResourceId)
	}
	return s, nil
}

func uploadCode(ctx context.Context, cfg aws.Config, dist string) error {
	c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(CodeBucket)}); err != nil {
		var owned interface{ ErrorCode() string }
		if !errors.As(err, &owned) || owned.ErrorCode() != "BucketAlreadyOwnedByYou" {
			return fmt.Errorf("create bucket %s: %w", CodeBucket, err)
		}
	}
	zips, err := filepath.Glob(filepath.Join(dist, "*.zip"))
	if err != nil || len(zips) == 0 {
		return fmt.Errorf("no zips in %s: run scripts/build-lambda.sh first", dist)
	}
	for _, z := range zips {
		b, err := os.ReadFile(z)
		if err != nil {
			return err
		}
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(CodeBucket), Key: aws.String(filepath.Base(z)), Body: bytes.NewReader(b)}); err != nil {
			return fmt.Errorf("upload %s: %w", z, err)
		}
	}
	return nil
}

// Delete deletes the stack and waits until CloudFormation has.
func (s *Stack) Delete(ctx context.Context) error {
	cf := cloudformation.NewFromConfig(s.Config)
	if _, err := cf.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(s.Name)}); err != nil {
		return err
	}
	for ctx.Err() == nil {
		_, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(s.Name)})
		if err != nil {
			return nil // moto forgets a deleted stack's name
		}
		time.Sleep(100 * time.Millisecond)
	}
	return ctx.Err()
}

// RoleStatement is one statement of an IAM policy document.
type RoleStatement struct {
	Effect    string
	Actions   []string
	Resources []string
	Condition map[string]any
}

// Policy returns the statements of the inline policies of a function's
// execution role, as IAM answers GetRolePolicy, and the ARNs of its
// managed policies.
func (s *Stack) Policy(ctx context.Context, function string) ([]RoleStatement, []string, error) {
	fn, err := lambda.NewFromConfig(s.Config).GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(s.Resources[function])})
	if err != nil {
		return nil, nil, err
	}
	role := aws.ToString(fn.Role)
	role = role[strings.LastIndex(role, "/")+1:]
	c := iam.NewFromConfig(s.Config)
	names, err := c.ListRolePolicies(ctx, &iam.ListRolePoliciesInput{RoleName: aws.String(role)})
	if err != nil {
		return nil, nil, err
	}
	var out []RoleStatement
	for _, name := range names.PolicyNames {
		p, err := c.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: aws.String(role), PolicyName: aws.String(name)})
		if err != nil {
			return nil, nil, err
		}
		stmts, err := parsePolicy(aws.ToString(p.PolicyDocument))
		if err != nil {
			return nil, nil, fmt.Errorf("role %s policy %s: %w", role, name, err)
		}
		out = append(out, stmts...)
	}
	attached, err := c.ListAttachedRolePolicies(ctx, &iam.ListAttachedRolePoliciesInput{RoleName: aws.String(role)})
	if err != nil {
		return nil, nil, err
	}
	var managed []string
	for _, a := range attached.AttachedPolicies {
		managed = append(managed, aws.ToString(a.PolicyArn))
	}
	return out, managed, nil
}

// parsePolicy reads a policy document as GetRolePolicy returns it: URL
// encoded JSON. moto 5.2.1 stores an inline policy that CloudFormation
// gave it as an object in Python's notation ('Effect': 'Allow', None) and
// keeps the statements an !If left as AWS::NoValue as None; both are read
// here, the None statements dropped, as CloudFormation drops them.
func parsePolicy(doc string) ([]RoleStatement, error) {
	if d, err := url.QueryUnescape(doc); err == nil {
		doc = d
	}
	var raw struct {
		Statement []json.RawMessage
	}
	if err := json.Unmarshal([]byte(doc), &raw); err != nil {
		if err := json.Unmarshal([]byte(pythonToJSON(doc)), &raw); err != nil {
			return nil, fmt.Errorf("policy document %q: %w", doc, err)
		}
	}
	var out []RoleStatement
	for _, r := range raw.Statement {
		if string(r) == "null" {
			continue
		}
		var st struct {
			Effect    string
			Action    any
			Resource  any
			Condition map[string]any
		}
		if err := json.Unmarshal(r, &st); err != nil {
			return nil, err
		}
		out = append(out, RoleStatement{Effect: st.Effect, Actions: strs(st.Action), Resources: strs(st.Resource), Condition: st.Condition})
	}
	return out, nil
}

// pythonToJSON rewrites a Python literal of dicts, lists, strings without
// quotes inside, None, True and False as JSON.
func pythonToJSON(s string) string {
	var b strings.Builder
	inString := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			inString = !inString
			b.WriteByte('"')
		case !inString && strings.HasPrefix(s[i:], "None"):
			b.WriteString("null")
			i += 3
		case !inString && strings.HasPrefix(s[i:], "True"):
			b.WriteString("true")
			i += 3
		case !inString && strings.HasPrefix(s[i:], "False"):
			b.WriteString("false")
			i += 4
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func strs(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			s, _ := e.(string)
			out = append(out, s)
		}
		return out
	}
	return nil
}

// Grants returns, per logical id of a table of the stack, the sorted
// actions the Allow statements of a function's inline policies grant on
// it (on the table or on one of its indexes), as the stack built them.
// A resource that is no table of the stack is an error.
func (s *Stack) Grants(ctx context.Context, function string) (map[string][]string, error) {
	stmts, _, err := s.Policy(ctx, function)
	if err != nil {
		return nil, err
	}
	arns, err := s.tableARNs(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, st := range stmts {
		if st.Effect != "Allow" {
			continue
		}
		for _, r := range st.Resources {
			table, _, _ := strings.Cut(r, "/index/")
			id, ok := arns[table]
			if !ok {
				return nil, fmt.Errorf("%s is granted %v on %s, no table of the stack", function, st.Actions, r)
			}
			for _, a := range st.Actions {
				if !slices.Contains(out[id], a) {
					out[id] = append(out[id], a)
				}
			}
		}
	}
	for id := range out {
		slices.Sort(out[id])
	}
	return out, nil
}

// TableARN returns the ARN of a table of the stack, by logical id.
func (s *Stack) TableARN(ctx context.Context, logicalID string) (string, error) {
	out, err := dynamodb.NewFromConfig(s.Config).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.Resources[logicalID])})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.Table.TableArn), nil
}

func (s *Stack) tableARNs(ctx context.Context) (map[string]string, error) {
	cf := cloudformation.NewFromConfig(s.Config)
	out, err := cf.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(s.Name)})
	if err != nil {
		return nil, err
	}
	arns := map[string]string{}
	for _, r := range out.StackResources {
		if aws.ToString(r.ResourceType) != "AWS::DynamoDB::Table" {
			continue
		}
		arn, err := s.TableARN(ctx, aws.ToString(r.LogicalResourceId))
		if err != nil {
			return nil, err
		}
		arns[arn] = aws.ToString(r.LogicalResourceId)
	}
	return arns, nil
}

// Environment returns a function's environment variables, as Lambda
// answers GetFunctionConfiguration.
func (s *Stack) Environment(ctx context.Context, function string) (map[string]string, error) {
	fn, err := lambda.NewFromConfig(s.Config).GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(s.Resources[function])})
	if err != nil {
		return nil, err
	}
	if fn.Environment == nil {
		return map[string]string{}, nil
	}
	return fn.Environment.Variables, nil
}

// Tools reports what a stack test needs and is missing: the endpoint
// (EndpointEnv), the built code (DistEnv), python3 with the SAM
// translator. Empty when nothing is.
func Tools() (endpoint, dist string, missing []string) {
	endpoint, dist = os.Getenv(EndpointEnv), os.Getenv(DistEnv)
	if endpoint == "" {
		missing = append(missing, EndpointEnv+" (a moto server's URL)")
	}
	if dist == "" {
		missing = append(missing, DistEnv+" (the directory scripts/build-lambda.sh wrote)")
	}
	if err := exec.Command("python3", "-c", "import samtranslator, cfnlint").Run(); err != nil {
		missing = append(missing, "python3 with aws-sam-translator and cfn-lint (pip install cfn-lint)")
	}
	return endpoint, dist, missing
}

// ForTest returns a stack of template.yaml with the parameters on the
// moto server EndpointEnv names, created by the first test of the process
// that asks for these parameters and shared by the others (a stack takes
// moto several seconds to build): tests read it and must not change it.
// Shared stacks are left on the server when the process ends (.ci/run
// stops its moto server). Without EndpointEnv the test is skipped; with
// it and anything else missing, it fails.
func ForTest(t testing.TB, params map[string]string) *Stack {
	t.Helper()
	return TemplateForTest(t, "template.yaml", params)
}

// TemplateForTest is ForTest for another template (a path from the
// repository's root).
func TemplateForTest(t testing.TB, template string, params map[string]string) *Stack {
	t.Helper()
	key := template
	for _, k := range slices.Sorted(maps.Keys(params)) {
		key += "\x00" + k + "=" + params[k]
	}
	shared.Lock()
	defer shared.Unlock()
	if s, ok := shared.stacks[key]; ok {
		return s
	}
	s := create(t, template, params)
	if shared.stacks == nil {
		shared.stacks = map[string]*Stack{}
	}
	shared.stacks[key] = s
	return s
}

// shared holds the stacks ForTest created, by template and parameters.
var shared struct {
	sync.Mutex
	stacks map[string]*Stack
}

// OwnForTest creates a stack of template.yaml with the parameters for one
// test, which may change or delete it, and deletes it (if the test did
// not) when the test ends. Skipped and failed as ForTest.
func OwnForTest(t testing.TB, params map[string]string) *Stack {
	t.Helper()
	s := create(t, "template.yaml", params)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Delete(ctx); err != nil {
			t.Errorf("delete stack %s: %v", s.Name, err)
		}
	})
	return s
}

func create(t testing.TB, template string, params map[string]string) *Stack {
	t.Helper()
	if os.Getenv(EndpointEnv) == "" { // before Tools: its Python check takes a second
		t.Skipf("stack test: %s is not set (.ci/run sets it and runs this test on moto)", EndpointEnv)
	}
	endpoint, dist, missing := Tools()
	if len(missing) > 0 {
		t.Fatalf("stack test: missing %s", strings.Join(missing, ", "))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	name := fmt.Sprintf("t%d-%s", time.Now().UnixNano()%1e9, regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-"))
	if len(name) > 60 {
		name = name[:60]
	}
	name = strings.TrimRight(name, "-")
	s, err := Deploy(ctx, MotoConfig(endpoint), dist, template, name, params)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
