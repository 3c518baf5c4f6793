package deploytest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RIEEnv names the environment variable that holds the path of AWS's
// Lambda Runtime Interface Emulator (aws-lambda-rie, built by .ci/run with
// go install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie).
// Unset, the emulator tests skip; .ci/run sets it and fails when one
// skips.
const RIEEnv = "IDEMKEY_RIE"

// Function is a bootstrap binary served by the Runtime Interface
// Emulator: one execution environment, which the emulator starts at the
// first invocation and again after an invocation that timed out.
type Function struct {
	// URL is the emulator's invocation endpoint.
	URL string
	log *syncBuffer
	rie *os.Process
}

// Freeze stops (SIGSTOP) the processes the emulator runs, as Lambda
// freezes an execution environment: the function's code notices nothing,
// neither its deadline nor that the emulator then ends the invocation.
func (f *Function) Freeze() error {
	// Each thread of the emulator lists the processes it started.
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", f.rie.Pid))
	if err != nil {
		return err
	}
	var pids []string
	for _, task := range tasks {
		children, err := os.ReadFile(task)
		if err != nil {
			return err
		}
		pids = append(pids, strings.Fields(string(children))...)
	}
	if len(pids) == 0 {
		return errors.New("the emulator runs no process")
	}
	for _, p := range pids {
		pid, err := strconv.Atoi(p)
		if err != nil {
			return err
		}
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return err
		}
	}
	return nil
}

// Invoke sends an event (marshalled to JSON) and returns the function's
// answer: its response, or the error document the runtime reported
// (errorMessage, errorType), as the emulator answers with HTTP 200.
func (f *Function) Invoke(ctx context.Context, event any) ([]byte, error) {
	body, err := json.Marshal(event)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("emulator answered %d: %s", resp.StatusCode, out)
	}
	return out, nil
}

// Log returns what the emulator and the function wrote so far.
func (f *Function) Log() string { return f.log.String() }

// RunForTest serves the bootstrap binary under the Runtime Interface
// Emulator RIEEnv names with exactly the environment env (plus PATH and
// the function's timeout, AWS_LAMBDA_FUNCTION_TIMEOUT, in whole seconds)
// and stops it when the test ends. Without RIEEnv the test is skipped.
func RunForTest(t testing.TB, bootstrap string, env map[string]string, timeout time.Duration) *Function {
	t.Helper()
	rie := os.Getenv(RIEEnv)
	if rie == "" {
		t.Skipf("emulator test: %s is not set (.ci/run builds aws-lambda-rie and runs this test)", RIEEnv)
	}
	ports := make([]string, 2)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = l.Addr().String()
		_ = l.Close()
	}
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", ports[0], "--runtime-api-address", ports[1], bootstrap)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + cmd.Dir,
		"AWS_LAMBDA_FUNCTION_TIMEOUT=" + strconv.Itoa(int(timeout/time.Second))}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("emulator log:\n%s", log.String())
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("tcp", ports[0])
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the emulator did not listen on %s: %s", ports[0], log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &Function{URL: "http://" + ports[0] + "/2015-03-31/functions/function/invocations", log: log, rie: cmd.Process}
}

// syncBuffer is a bytes.Buffer safe for the emulator's two writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
