package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/examples/payments/paymentsapi"
	"github.com/idemkey/idemkey/localstack"
)

// tryIt returns the "Try it" section of the module's README.
func tryIt(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(b), "\n## Try it\n")
	require.True(t, ok, "README.md has no Try it section")
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// shellLines returns the lines of the section's sh blocks, with
// continuation lines joined.
func shellLines(section string) []string {
	var lines []string
	in := false
	for _, line := range strings.Split(section, "\n") {
		switch {
		case strings.TrimSpace(line) == "```sh":
			in = true
		case in && strings.TrimSpace(line) == "```":
			in = false
		case in && len(lines) > 0 && strings.HasSuffix(lines[len(lines)-1], "\\"):
			last := strings.TrimSuffix(lines[len(lines)-1], "\\")
			lines[len(lines)-1] = last + strings.TrimSpace(line)
		case in:
			lines = append(lines, line)
		}
	}
	return lines
}

// words splits a command line as the shell does for the README's
// commands: words separated by blanks, single-quoted strings taken as
// they are, a comment from an unquoted # to the end.
func words(line string) []string {
	var out []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, c := range line {
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			cur.WriteRune(c)
		case c == '\'':
			quoted, inWord = true, true
		case c == '#' && !inWord:
			return out
		case c == ' ' || c == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// curl is one curl command of the session and the output the README
// shows for it.
type curl struct {
	line       string
	method     string
	path       string
	header     http.Header
	body       string
	include    bool // -i: the status line and headers are printed
	background bool
	expected   []string
}

func parseCurl(t *testing.T, line string) *curl {
	t.Helper()
	w := words(line)
	c := &curl{line: line, method: "GET", header: http.Header{}}
	if w[len(w)-1] == "&" {
		c.background, w = true, w[:len(w)-1]
	}
	for i := 1; i < len(w); i++ {
		switch a := w[i]; {
		case a == "-s":
		case a == "-si" || a == "-is" || a == "-i":
			c.include = true
		case a == "-o" && i+1 < len(w) && w[i+1] == "/dev/null":
			i++
		case a == "-H" && i+1 < len(w):
			name, value, ok := strings.Cut(w[i+1], ":")
			require.True(t, ok, "header %q in %s", w[i+1], line)
			c.header.Add(name, strings.TrimSpace(value))
			i++
		case a == "-d" && i+1 < len(w):
			c.method, c.body = "POST", w[i+1]
			i++
		case strings.HasPrefix(a, "localhost:8080/"):
			c.path = strings.TrimPrefix(a, "localhost:8080")
		default:
			t.Fatalf("the session test does not know curl's %q in: %s", a, line)
		}
	}
	if c.body != "" && c.header.Get("Content-Type") == "" {
		c.header.Set("Content-Type", "application/x-www-form-urlencoded") // as curl -d sends
	}
	require.NotEmpty(t, c.path, "no localhost:8080 URL in: %s", line)
	return c
}

var payID = regexp.MustCompile(`pay_[0-9a-z]+`)

// pattern returns a regexp for a line the README shows: pay_... stands for
// a payment id, everything else is literal.
func pattern(shown string) *regexp.Regexp {
	parts := strings.Split(shown, "pay_...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, "pay_[0-9a-z]+") + "$")
}

// heldCommits is the session's DynamoDB client: the real one, which can
// hold back the next commit (TransactWriteItems) and report the next claim
// on the key table (PutItem), so that the README's "two copies at once"
// happens in that order whatever the machine's speed.
type heldCommits struct {
	*dynamodb.Client
	keyTable string
	mu       sync.Mutex
	claimed  chan struct{}
	release  chan struct{}
}

func (h *heldCommits) holdNext() (claimed <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.claimed, h.release = make(chan struct{}), make(chan struct{})
	return h.claimed
}

func (h *heldCommits) releaseAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.release != nil {
		close(h.release)
		h.release = nil
	}
}

func (h *heldCommits) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := h.Client.PutItem(ctx, in, optFns...)
	h.mu.Lock()
	if h.claimed != nil && *in.TableName == h.keyTable {
		close(h.claimed)
		h.claimed = nil
	}
	h.mu.Unlock()
	return out, err
}

func (h *heldCommits) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	h.mu.Lock()
	release := h.release
	h.mu.Unlock()
	if release != nil {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h.Client.TransactWriteItems(ctx, in, optFns...)
}

// TestReadmeTryItSessionIsWhatTheServerAnswers runs the curl commands of
// the README's "Try it" against the server started with the README's
// flags, and compares every status line, header and body the README shows
// with the answers.
func TestReadmeTryItSessionIsWhatTheServerAnswers(t *testing.T) {
	lines := shellLines(tryIt(t))
	var args []string
	var cmds []*curl
	var last *curl
	for _, line := range lines {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "go run ./examples/payments"):
			args = words(strings.TrimPrefix(trimmed, "go run ./examples/payments"))
		case strings.HasPrefix(trimmed, "curl "):
			last = parseCurl(t, trimmed)
			cmds = append(cmds, last)
		case strings.HasPrefix(trimmed, "# ") && last != nil && !last.background:
			last.expected = append(last.expected, strings.TrimPrefix(trimmed, "# "))
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			last = nil
		case strings.HasPrefix(trimmed, "sleep ") || strings.HasPrefix(trimmed, "wait"):
			cmds = append(cmds, &curl{line: trimmed})
			last = nil
		default:
			t.Fatalf("the session test does not know this line of Try it: %s", line)
		}
	}
	require.NotNil(t, args, "Try it starts no go run ./examples/payments")
	require.GreaterOrEqual(t, len(cmds), 6)

	s, err := parseFlags(args, io.Discard)
	require.NoError(t, err, "the README's flags %q", args)
	s.api.Latency = 0 // heldCommits keeps the first copy in flight instead
	ep := localstack.ForTest(t)
	s.api.KeyTable, s.api.PaymentTable = localstack.TableName("keys"), localstack.TableName("payments")
	require.NoError(t, paymentsapi.EnsureTables(context.Background(), ep.Client, s.api))
	t.Cleanup(func() { deleteTables(t, ep.Client, s.api.KeyTable, s.api.PaymentTable) })
	client := &heldCommits{Client: ep.Client, keyTable: s.api.KeyTable}
	srv := httptest.NewServer(paymentsapi.NewHandler(client, s.api))
	defer srv.Close()
	defer client.releaseAll()

	var background sync.WaitGroup
	var claimed <-chan struct{}
	ids := map[string]string{}
	for _, c := range cmds {
		switch {
		case strings.HasPrefix(c.line, "sleep "):
			// The README waits for the copy to be in flight; the test waits
			// for its claim, and holds its commit until "wait".
			if claimed != nil {
				<-claimed
			}
		case strings.HasPrefix(c.line, "wait"):
			client.releaseAll()
			background.Wait()
		case c.background:
			claimed = client.holdNext()
			background.Add(1)
			go func() {
				defer background.Done()
				resp, err := send(srv.URL, c)
				if assert.NoError(t, err, c.line) {
					assert.Equal(t, http.StatusCreated, resp.code, "the first copy creates the payment: %s", c.line)
				}
			}()
		default:
			resp, err := send(srv.URL, c)
			require.NoError(t, err, c.line)
			compare(t, c, resp)
			// Every answer for one key names one payment.
			if key := c.header.Get("Idempotency-Key"); key != "" && resp.code == http.StatusCreated {
				id := payID.FindString(resp.body)
				if first, ok := ids[key]; ok {
					assert.Equal(t, first, id, "the retry with key %s names another payment", key)
				}
				ids[key] = id
			}
		}
	}
	client.releaseAll()
	background.Wait()
}

type answer struct {
	code   int
	status string // the status line
	header http.Header
	body   string
}

func send(base string, c *curl) (answer, error) {
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, base+c.path, body)
	if err != nil {
		return answer{}, err
	}
	req.Header = c.header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Proto + " " + resp.Status, resp.Header, string(bytes.TrimSuffix(b, []byte("\n")))}, err
}

// compare checks the answer against what the README shows for c: with -i
// the status line, then headers until the body; the body last.
func compare(t *testing.T, c *curl, got answer) {
	t.Helper()
	shown := c.expected
	require.NotEmpty(t, shown, "the README shows no output for: %s", c.line)
	if c.include {
		assert.Equal(t, shown[0], got.status, c.line)
		shown = shown[1:]
		for len(shown) > 1 {
			name, value, ok := strings.Cut(shown[0], ": ")
			require.True(t, ok, "%q is not a header line, in the output of %s", shown[0], c.line)
			assert.Regexp(t, pattern(value), got.header.Get(name), "header %s of: %s", name, c.line)
			shown = shown[1:]
		}
	}
	require.Len(t, shown, 1, "the README shows one body line for: %s", c.line)
	assert.Regexp(t, pattern(shown[0]), got.body, "body of: %s", c.line)
}

func deleteTables(t *testing.T, client *dynamodb.Client, tables ...string) {
	for _, table := range tables {
		if _, err := client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &table}); err != nil {
			t.Errorf("deleting %s: %v", table, err)
		}
	}
}

// TestReadmeListsEveryFlagWithItsDefault compares the README's table of
// flags with the command's flags.
func TestReadmeListsEveryFlagWithItsDefault(t *testing.T) {
	row := regexp.MustCompile("^\\| `-([a-z-]+)` \\| `([^`]*)` \\|")
	readme := map[string]string{}
	for _, line := range strings.Split(tryIt(t), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			readme[m[1]] = m[2]
		}
	}
	fs := flagSet(&settings{}, io.Discard)
	fs.VisitAll(func(f *flag.Flag) {
		shown, ok := readme[f.Name]
		if !assert.True(t, ok, "the README's table of flags has no -%s", f.Name) {
			return
		}
		// Set the README's default on a fresh set, then compare the values.
		fresh := flagSet(&settings{}, io.Discard)
		require.NoError(t, fresh.Set(f.Name, shown), "-%s %s", f.Name, shown)
		assert.Equal(t, f.DefValue, fresh.Lookup(f.Name).Value.String(), "the README's default of -%s", f.Name)
		delete(readme, f.Name)
	})
	assert.Empty(t, readme, "the README lists flags the command does not have")
}
