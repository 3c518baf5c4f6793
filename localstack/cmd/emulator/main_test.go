package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// buildEmulator builds this command, once per test binary, and returns the
// path of the executable.
func buildEmulator(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			buildErr = err
			return
		}
		if buildDir, buildErr = os.MkdirTemp("", "emulator-test-"); buildErr != nil {
			return
		}
		builtBin = filepath.Join(buildDir, "emulator")
		out, err := exec.Command(goTool, "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// startEmulator runs the built command with args and returns it with the URL
// from its "listening on" line.
func startEmulator(t *testing.T, bin string, args ...string) (*exec.Cmd, string, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case line, ok := <-lines:
		url, found := strings.CutPrefix(line, "listening on ")
		if !ok || !found {
			t.Fatalf("first stdout line = %q, want \"listening on URL\"; stderr:\n%s", line, stderr)
		}
		return cmd, url, stderr
	case <-time.After(30 * time.Second):
		t.Fatalf("no \"listening on\" line within 30s; stderr:\n%s", stderr)
	}
	return nil, "", nil
}

// createTable creates table name, keyed by the string attribute pk.
func createTable(t *testing.T, db *dynamodb.Client, name string) {
	t.Helper()
	if _, err := db.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
}

func TestEmulatorServesDynamoDBAndExitsCleanlyOnSIGTERM(t *testing.T) {
	bin := buildEmulator(t)
	cmd, url, stderr := startEmulator(t, bin, "-addr", "127.0.0.1:0")

	db := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(url),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
	ctx := context.Background()
	createTable(t, db, "t")
	out, err := db.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil || len(out.TableNames) != 1 {
		t.Fatalf("ListTables = %v, %v; want [t] (the front is in place)", out, err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v; stderr:\n%s", err, stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("still running 15s after SIGTERM; stderr:\n%s", stderr)
	}
	if !strings.Contains(stderr.String(), "serving DynamoDB at "+url) {
		t.Errorf("stderr lacks the start line with %s:\n%s", url, stderr)
	}
}

func TestRunRejectsBadFlagsAndArguments(t *testing.T) {
	var out, errOut strings.Builder
	if got := run([]string{"-no-such-flag"}, &out, &errOut); got != 2 {
		t.Errorf("unknown flag: status %d, want 2", got)
	}
	if got := run([]string{"extra"}, &out, &errOut); got != 2 {
		t.Errorf("extra argument: status %d, want 2", got)
	}
	if got := run([]string{"-addr", "256.0.0.1:0"}, &out, &errOut); got != 1 {
		t.Errorf("unusable address: status %d, want 1", got)
	}
	if out.Len() != 0 {
		t.Errorf("stdout = %q, want nothing when not listening", out.String())
	}
}
