package reliability

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemkey/idemkey/client"
	"github.com/idemkey/idemkey/dynamostore"
	"github.com/idemkey/idemkey/examples/payments/paymentsapi"
	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
)

// Knobs of the crash-restart test, read from the environment.
const (
	crashSeedEnv  = "IDEMKEY_CRASH_SEED"  // default 1
	crashKillsEnv = "IDEMKEY_CRASH_KILLS" // default 5
)

const paymentsPkg = "github.com/idemkey/idemkey/examples/payments"

// TestSIGKILLedServerUnderLoadNeitherDuplicatesNorLosesAPayment runs the
// payments server as its own process, against the emulator served by the
// test (or AWS_ENDPOINT_URL_DYNAMODB), with a lease of one second, while clients
// drive logical operations through the retrying client. At random points
// it kills the server with SIGKILL, so that requests die between claim and
// commit, between commit and answer, or before the claim, and restarts it
// on the same port; the clients retry through the refused connections.
// After the last kill and restart the load stops, every operation that got
// no payment is retried once with its key, and the tables must hold
// exactly one payment per operation, each pointed to by a completed key
// record that stores the payment its client was given.
func TestSIGKILLedServerUnderLoadNeitherDuplicatesNorLosesAPayment(t *testing.T) {
	t.Parallel() // with the chaos test, while go build runs
	seed := envUint(t, crashSeedEnv, 1)
	kills := int(envUint(t, crashKillsEnv, 5))
	rng := rand.New(rand.NewPCG(seed, 0x6372617368))
	ctx := t.Context()

	dir := t.TempDir()
	build(t, dir, paymentsPkg)
	ep := localstack.ForTest(t) // an embedded emulator outlives every kill of the server
	cfg := newTables(t, ep.Client, "crash")

	srv := &server{
		bin:    filepath.Join(dir, "payments"),
		env:    []string{localstack.EndpointEnv + "=" + ep.URL},
		args:   []string{"-lease", cfg.Lease.String(), "-ttl", cfg.Retention.String(), "-key-table", cfg.KeyTable, "-payment-table", cfg.PaymentTable},
		stderr: &tail{max: 8 << 10},
	}
	t.Cleanup(func() {
		srv.kill()
		if t.Failed() {
			t.Logf("the payments server's last stderr:\n%s", srv.stderr.String())
		}
	})
	// Each start draws the handler's latency (-latency: a sleep between
	// claim and commit) from 0 to 50 ms, so that kills often find
	// requests there.
	latency := func() time.Duration { return time.Duration(rng.IntN(51)) * time.Millisecond }
	if err := srv.start("127.0.0.1:0", latency()); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.url, "http://"))
	addr := net.JoinHostPort("127.0.0.1", port)
	baseURL := srv.url

	clientTransport := newTransport(t)
	var tally attempts
	// Sixty attempts within six seconds: through a restart, then a dead
	// claim's one-second lease.
	hc := client.New(&http.Client{Transport: clientTransport}, clientOptions(seed, 60, 6*time.Second, &tally))

	var (
		mu      sync.Mutex
		ops     []*operation
		stopped atomic.Bool
	)
	run := fmt.Sprintf("crash-%d", seed)
	next := func() *operation {
		if stopped.Load() {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		op := newOperation(run, len(ops))
		op.key = client.NewKey() // known before the first attempt, so that a kill can look it up
		ops = append(ops, op)
		return op
	}
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		drive(ctx, 6, hc, baseURL, next)
	}()

	// deadClaims are the lock tokens of the claims a kill left in
	// progress: requests that died between their claim and their commit.
	store := dynamostore.New(ep.Client, cfg.KeyTable)
	deadClaims := map[string]bool{}
	findDeadClaims := func() {
		mu.Lock()
		var inFlight []*operation
		for _, op := range ops {
			if !op.sent.Load() {
				inFlight = append(inFlight, op)
			}
		}
		mu.Unlock()
		for _, op := range inFlight {
			rec, err := store.Get(ctx, paymentsapi.OwnerOf(op.token), op.key)
			if err == nil && rec.State == dynamostore.StateInProgress {
				deadClaims[rec.LockToken] = true
			}
		}
	}

	start := time.Now()
	for k := range kills {
		time.Sleep(time.Duration(100+rng.IntN(300)) * time.Millisecond)
		srv.kill()
		findDeadClaims()
		time.Sleep(time.Duration(rng.IntN(201)) * time.Millisecond)
		if err := srv.start(addr, latency()); err != nil {
			stopped.Store(true)
			<-loadDone
			t.Fatalf("restart %d: %v", k+1, err)
		}
	}
	stopped.Store(true)
	<-loadDone
	elapsed := time.Since(start)

	errorsByStatus := clientErrors(t, ops)
	patient := client.New(&http.Client{Transport: clientTransport}, clientOptions(seed+1, 100, 30*time.Second, nil))
	retried := retryFailed(t, ctx, patient, baseURL, ops)
	a := auditTables(t, ctx, ep.Client, cfg, ops)
	seen := tally.snapshot()

	t.Logf("seed %d, %d operations in %v, %d kills", seed, len(ops), elapsed.Round(time.Millisecond), kills)
	t.Logf("client attempts by answer: %s", list(seen))
	t.Logf("payments in the table: %d; replayed answers: %d; operations retried afterwards: %d", a.payments, a.replayed, retried)
	ddbtest.Report(t, fmt.Sprintf("crash ops=%d kills=%d dead_claims=%d cut_attempts=%d refused_attempts=%d %s replayed=%d retried=%d client_errors=%s seed=%d",
		len(ops), kills, len(deadClaims), seen["cut"], seen["refused"], a.fields(), a.replayed, retried, list(errorsByStatus), seed))

	a.check(t)
	if kills > 0 && len(deadClaims) == 0 {
		t.Errorf("no kill struck a request between its claim and its commit: the run proves nothing about them")
	}
}

// build compiles the packages into dir with the go command.
func build(t *testing.T, dir string, pkgs ...string) {
	t.Helper()
	args := append([]string{"build", "-o", dir + string(os.PathSeparator)}, pkgs...)
	out, err := exec.CommandContext(t.Context(), "go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
}

// server is the payments server process, restarted on the same address.
type server struct {
	bin    string
	env    []string
	args   []string
	stderr *tail

	proc *process
	url  string
}

// start starts the server on addr, retrying for a few seconds when it
// exits before it listens (the port may still be held by a dying
// process).
func (s *server) start(addr string, latency time.Duration) error {
	args := append([]string{"-addr", addr, "-latency", latency.String()}, s.args...)
	var err error
	for range 20 {
		if s.proc, err = startProcess(s.env, s.stderr, s.bin, args...); err == nil {
			s.url = s.proc.url
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// kill sends SIGKILL to the server and waits for it to die.
func (s *server) kill() {
	if s.proc != nil {
		s.proc.kill()
	}
}

// process is a started child process that printed its URL.
type process struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{} // closed once the process has exited
	err  error         // cmd.Wait's error, set before done is closed
}

// startProcess starts bin and waits until it prints a line with an
// http:// URL on stdout (at most 30 seconds), or exits.
func startProcess(env []string, stderr io.Writer, bin string, args ...string) (*process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	watch := &urlWatcher{found: make(chan string, 1)}
	cmd.Stdout = watch
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case p.url = <-watch.found:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before it listened: %v", filepath.Base(bin), p.err)
	case <-timer.C:
		p.kill()
		return nil, fmt.Errorf("%s printed no URL within 30s", filepath.Base(bin))
	}
}

// kill sends SIGKILL and waits for the process to exit. It is safe to call
// more than once.
func (p *process) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

var urlPattern = regexp.MustCompile(`http://[0-9.:]+`)

// urlWatcher is a process's stdout: it sends the first URL found in a
// complete line to found, and discards everything else.
type urlWatcher struct {
	mu    sync.Mutex
	line  []byte
	found chan string
	sent  bool
}

func (w *urlWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sent {
		return len(p), nil
	}
	w.line = append(w.line, p...)
	for {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			break
		}
		if u := urlPattern.Find(w.line[:i]); u != nil {
			w.found <- string(u)
			w.sent, w.line = true, nil
			return len(p), nil
		}
		w.line = w.line[i+1:]
	}
	if len(w.line) > 64<<10 {
		w.line = nil
	}
	return len(p), nil
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
