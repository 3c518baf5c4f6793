package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/localstack"
)

var urlLine = regexp.MustCompile(`http://[0-9.:]+`)

// startProcess runs a built binary and returns the first URL it prints on
// stdout.
func startProcess(t *testing.T, env []string, bin string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	found := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if u := urlLine.FindString(lines.Text()); u != "" {
				found <- u
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case u := <-found:
		return cmd, u
	case <-time.After(60 * time.Second):
		t.Fatalf("%s printed no URL", bin)
		return nil, ""
	}
}

// binDir holds the payments command, built once per test process.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "payments-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var buildPayments = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "payments")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// paymentsBinary returns the built payments command.
func paymentsBinary(t *testing.T) string {
	t.Helper()
	bin, err := buildPayments()
	require.NoError(t, err)
	return bin
}

// TestKilledBetweenClaimAndCommitExecutesOnceAfterLease kills the payments
// server with SIGKILL while a payment is between its claim and its commit,
// restarts it, and retries: the retry gets 409 while the dead claim's lease
// runs, then executes exactly once.
func TestKilledBetweenClaimAndCommitExecutesOnceAfterLease(t *testing.T) {
	payments := paymentsBinary(t)
	endpoint := os.Getenv(localstack.EndpointEnv)
	if endpoint == "" { // the emulator in this process outlives the killed server
		emulator := httptest.NewServer(localstack.NewHandler())
		t.Cleanup(emulator.Close)
		endpoint = emulator.URL
	}
	t.Setenv(localstack.EndpointEnv, endpoint)
	ep, err := localstack.Start(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { _ = ep.Close() })

	keyTable, paymentTable := localstack.TableName("keys"), localstack.TableName("payments")
	t.Cleanup(func() { deleteTables(t, ep.Client, keyTable, paymentTable) }) // after the servers stop
	env := []string{localstack.EndpointEnv + "=" + endpoint}
	const lease = time.Second // the restart takes tens of milliseconds
	args := []string{"-addr", "127.0.0.1:0", "-lease", lease.String(), "-key-table", keyTable, "-payment-table", paymentTable}
	server, url := startProcess(t, env, payments, append(args, "-latency", "1h")...)

	post := func(url string) (int, http.Header) {
		req, _ := http.NewRequest("POST", url+"/payments", strings.NewReader(`{"amount":700,"currency":"USD"}`))
		req.Header.Set("Authorization", "Bearer alice")
		req.Header.Set("Idempotency-Key", "crash-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	go post(url) // claims, then hangs in the handler

	// Wait until the claim is in the table (its only record), without
	// touching the key.
	var lockExp time.Time
	require.Eventually(t, func() bool {
		out, err := ep.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: &keyTable, ConsistentRead: aws.Bool(true)})
		if err != nil || len(out.Items) != 1 {
			return false
		}
		n, ok := out.Items[0]["e"].(*types.AttributeValueMemberN) // the lock's expiry
		if !ok {
			return false
		}
		ms, _ := strconv.ParseInt(n.Value, 10, 64)
		lockExp = time.UnixMilli(ms)
		return true
	}, 30*time.Second, 20*time.Millisecond)
	claimed := time.Now()

	require.NoError(t, server.Process.Signal(syscall.SIGKILL))
	_ = server.Wait()

	_, url = startProcess(t, env, payments, args...)
	status, hdr := post(url)
	require.True(t, time.Since(claimed) < lease, "the restart took longer than the lease; the test cannot check the 409")
	assert.Equal(t, http.StatusConflict, status, "before the lease ends the dead claim still holds the key")
	assert.NotEmpty(t, hdr.Get("Retry-After"))

	var final int
	require.Eventually(t, func() bool {
		final, hdr = post(url)
		return final != http.StatusConflict
	}, 3*lease, 100*time.Millisecond)
	assert.Equal(t, http.StatusCreated, final, "after the lease the retry executes")
	assert.Empty(t, hdr.Get("Idempotent-Replayed"))
	assert.False(t, time.Now().Before(lockExp), "not reclaimed before the dead claim's lock expired")

	status, hdr = post(url)
	assert.Equal(t, http.StatusCreated, status)
	assert.Equal(t, "true", hdr.Get("Idempotent-Replayed"))

	out, err := ep.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: &paymentTable, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	assert.Len(t, out.Items, 1, "exactly one payment")
}
