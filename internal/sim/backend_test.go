package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"
)

// The processes' SDK client reaches the embedded emulator through run.Do
// (an aws.HTTPClient): in process, without a network. Every HTTP attempt
// of the SDK parks its actor for a latency, may meet its planned fault,
// and, when it is a write to the key table, is recorded in the run's
// history with the item it replaced.

// simTimeout is what a client-side timeout looks like to the SDK.
type simTimeout struct{ after bool }

func (e simTimeout) Error() string {
	if e.after {
		return "sim: timeout after DynamoDB applied the call"
	}
	return "sim: timeout before DynamoDB saw the call"
}
func (simTimeout) Timeout() bool   { return true }
func (simTimeout) Temporary() bool { return true }

var errConnRefused = errors.New("sim: connection refused (the process is dead)")

// Do is the processes' HTTP client.
func (r *run) Do(req *http.Request) (*http.Response, error) {
	a := actorOf(req.Context())
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, errors.New("sim: DynamoDB call outside an actor")
	}
	op := req.Header.Get("X-Amz-Target")
	op = op[strings.LastIndexByte(op, '.')+1:]
	idx := a.calls
	a.calls++
	a.sleep(latency(a))
	if !a.alive() {
		r.tracef("%s %s not sent: dead", a.name, op)
		return nil, errConnRefused
	}
	fault := a.faults[idx]
	if fault != "" {
		r.fig.faults[fault]++
	}
	switch fault {
	case crash:
		if a.att == nil {
			break // only a client's attempt runs in a process that can crash
		}
		r.tracef("%s crashes its process before %s", a.name, op)
		a.att.p.crash(time.Second + time.Duration(a.rng.Int64N(int64(20*time.Second))))
		return nil, errConnRefused
	case throttle:
		r.tracef("%s %s: injected ThrottlingException", a.name, op)
		return synthetic(req, http.StatusBadRequest, "ThrottlingException", "Rate of requests exceeds the allowed throughput (injected)"), nil
	case serverError:
		r.tracef("%s %s: injected InternalServerError", a.name, op)
		return synthetic(req, http.StatusInternalServerError, "InternalServerError", "Internal server error (injected)"), nil
	case timeoutBefore:
		r.tracef("%s %s: injected timeout before sending", a.name, op)
		a.sleep(timeoutDelay(a))
		return nil, simTimeout{}
	case timeoutAfter:
		_ = r.serveAs(a, op, req.Header, body)
		r.tracef("%s %s: injected timeout after it was applied", a.name, op)
		a.sleep(timeoutDelay(a))
		return nil, simTimeout{after: true}
	}
	resp := r.serveAs(a, op, req.Header, body)
	a.sleep(latency(a))
	if !a.alive() {
		return nil, errConnRefused
	}
	resp.Request = req
	return resp, nil
}

func latency(a *actor) time.Duration {
	return 200*time.Microsecond + time.Duration(a.rng.Int64N(int64(20*time.Millisecond)))
}

func timeoutDelay(a *actor) time.Duration {
	return time.Second + time.Duration(a.rng.Int64N(int64(4*time.Second)))
}

func synthetic(req *http.Request, status int, code, msg string) *http.Response {
	b := fmt.Sprintf(`{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":%q}`, code, msg)
	return &http.Response{
		StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:          io.NopCloser(strings.NewReader(b)),
		ContentLength: int64(len(b)),
		Request:       req,
	}
}

// serveAs applies one call for actor a and records a key-table write.
func (r *run) serveAs(a *actor, op string, header http.Header, body []byte) *http.Response {
	kw := parseKeyWrite(op, body)
	var old *keyState
	if kw != nil {
		old = r.peek(kw.pk)
	}
	rec := r.serve(op, header, body)
	if r.tracing {
		r.tracef("%s %s%s → %d%s", a.name, op, kw.describe(r), rec.Code, errorCode(rec.Body.Bytes()))
	}
	if kw != nil && rec.Code == http.StatusOK {
		r.applied(a, kw, old)
	}
	return rec.Result()
}

// serve hands one request to the emulator.
func (r *run) serve(op string, header http.Header, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	if header != nil {
		req.Header = header.Clone()
	}
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.ContentLength = int64(len(body))
	rec := httptest.NewRecorder()
	r.front.ServeHTTP(rec, req)
	return rec
}

// direct is the observer's HTTP client: no actor, no latency, no fault.
type direct struct{ r *run }

func (d direct) Do(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	op := req.Header.Get("X-Amz-Target")
	resp := d.r.serve(op[strings.LastIndexByte(op, '.')+1:], req.Header, body).Result()
	resp.Request = req
	return resp, nil
}

func errorCode(body []byte) string {
	var e struct {
		Type string `json:"__type"`
	}
	if json.Unmarshal(body, &e) != nil || e.Type == "" {
		return ""
	}
	return " " + e.Type[strings.LastIndexByte(e.Type, '#')+1:]
}

// attr is one DynamoDB JSON attribute value (only S, N and B are read;
// B as its base64 text).
type attr struct {
	S *string `json:"S,omitempty"`
	N *string `json:"N,omitempty"`
	B *string `json:"B,omitempty"`
}

type jitem map[string]attr

func (it jitem) s(name string) string {
	if v, ok := it[name]; ok && v.S != nil {
		return *v.S
	}
	return ""
}

// sb returns a String's value or a Binary's base64 text: a lock token,
// which a record stores either way.
func (it jitem) sb(name string) string {
	if v, ok := it[name]; ok && v.B != nil {
		return *v.B
	}
	return it.s(name)
}

func (it jitem) n(name string) int64 {
	if v, ok := it[name]; ok && v.N != nil {
		n, _ := strconv.ParseInt(*v.N, 10, 64)
		return n
	}
	return 0
}

func sAttr(s string) attr { return attr{S: &s} }
func nAttr(n int64) attr  { v := strconv.FormatInt(n, 10); return attr{N: &v} }

// keyState is what the checks read of a key record.
type keyState struct {
	pk        string
	state     string
	lock      string
	lockExpMs int64
	expS      int64
}

func keyStateOf(it jitem) *keyState {
	if it == nil || it.s("pk") == "" {
		return nil
	}
	// The record's attributes (dynamostore's doc): s the state ("p" in
	// progress, "c" completed), l the lock token, e the lock's expiry.
	state := map[string]string{"p": "in_progress", "c": "completed"}[it.s("s")]
	return &keyState{pk: it.s("pk"), state: state, lock: it.sb("l"), lockExpMs: it.n("e"), expS: it.n("exp")}
}

// keyWrite is a write to the key table, as requested.
type keyWrite struct {
	op      string
	pk      string
	put     *keyState // the record written; nil for a delete
	delLock string    // a delete's :lock condition value
	effects []string  // the executions whose effects the write carries
}

func (kw *keyWrite) describe(r *run) string {
	if kw == nil {
		return ""
	}
	switch {
	case kw.put == nil:
		return " (delete " + kw.pk + ")"
	case kw.put.state == "in_progress":
		return fmt.Sprintf(" (claim %s lock=%s lock_exp=%s exp=%s)", kw.pk, r.lockName(kw.put.lock), msTime(kw.put.lockExpMs), sTime(kw.put.expS))
	default:
		return fmt.Sprintf(" (complete %s lock=%s exp=%s effects=%v)", kw.pk, r.lockName(kw.put.lock), sTime(kw.put.expS), kw.effects)
	}
}

// lockName names a lock token by the order in which the run first saw it
// (L1, L2, ...): the tokens themselves are random.
func (r *run) lockName(lock string) string {
	if lock == "" {
		return "none"
	}
	if n, ok := r.lockNames[lock]; ok {
		return n
	}
	n := fmt.Sprintf("L%d", len(r.lockNames)+1)
	r.lockNames[lock] = n
	return n
}

type putReq struct {
	TableName string `json:"TableName"`
	Item      jitem  `json:"Item"`
	Key       jitem  `json:"Key"`
	Values    jitem  `json:"ExpressionAttributeValues"`
}

// parseKeyWrite returns the key-table write of a request, or nil.
func parseKeyWrite(op string, body []byte) *keyWrite {
	switch op {
	case "PutItem":
		var p putReq
		if json.Unmarshal(body, &p) != nil || p.TableName != keyTable {
			return nil
		}
		return &keyWrite{op: op, pk: p.Item.s("pk"), put: keyStateOf(p.Item)}
	case "DeleteItem":
		var p putReq
		if json.Unmarshal(body, &p) != nil || p.TableName != keyTable {
			return nil
		}
		return &keyWrite{op: op, pk: p.Key.s("pk"), delLock: p.Values.sb(":lock")}
	case "TransactWriteItems":
		var t struct {
			TransactItems []struct {
				Put *putReq `json:"Put"`
			} `json:"TransactItems"`
		}
		if json.Unmarshal(body, &t) != nil {
			return nil
		}
		var kw *keyWrite
		var effects []string
		for _, it := range t.TransactItems {
			switch {
			case it.Put == nil:
			case it.Put.TableName == keyTable && kw == nil:
				kw = &keyWrite{op: op, pk: it.Put.Item.s("pk"), put: keyStateOf(it.Put.Item)}
			case it.Put.TableName == effectTable:
				effects = append(effects, it.Put.Item.s("exec"))
			}
		}
		if kw != nil {
			kw.effects = effects
		}
		return kw
	}
	return nil
}

// peek reads the key record at pk directly (consistent, no fault, no
// virtual time).
func (r *run) peek(pk string) *keyState {
	body, _ := json.Marshal(map[string]any{"TableName": keyTable, "Key": jitem{"pk": sAttr(pk)}, "ConsistentRead": true})
	rec := r.serve("GetItem", nil, body)
	var out struct {
		Item jitem `json:"Item"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
		r.violate("sim", "observer GetItem failed: %d %s", rec.Code, rec.Body.String())
		return nil
	}
	return keyStateOf(out.Item)
}

// scanAll reads every item of table directly.
func (r *run) scanAll(table string) []jitem {
	var items []jitem
	var start jitem
	for {
		in := map[string]any{"TableName": table, "ConsistentRead": true}
		if start != nil {
			in["ExclusiveStartKey"] = start
		}
		body, _ := json.Marshal(in)
		rec := r.serve("Scan", nil, body)
		var out struct {
			Items            []jitem `json:"Items"`
			LastEvaluatedKey jitem   `json:"LastEvaluatedKey"`
		}
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
			r.violate("sim", "observer Scan failed: %d %s", rec.Code, rec.Body.String())
			return items
		}
		items = append(items, out.Items...)
		if len(out.LastEvaluatedKey) == 0 {
			return items
		}
		start = out.LastEvaluatedKey
	}
}

// applied records a key-table write that DynamoDB applied, and checks that
// it replaced no live record of someone else.
func (r *run) applied(a *actor, kw *keyWrite, old *keyState) {
	now := r.s.now
	if kw.put == nil {
		owner := a.att != nil && old != nil && kw.delLock == old.lock
		if !owner {
			r.checkReplace(a.name, "deleted", old, now)
		} else {
			r.lockEnded[old.lock] = true // released by its owner
		}
		return
	}
	if old == nil || old.lock != kw.put.lock {
		r.checkReplace(a.name, "overwrote", old, now)
	}
	lock := kw.put.lock
	if kw.put.state != "in_progress" {
		r.lockEnded[lock] = true // committed
	}
	if kw.put.state == "in_progress" {
		c := &claimRec{lock: lock, pk: kw.pk, at: now, lockExpMs: kw.put.lockExpMs, expS: kw.put.expS, by: a.name}
		if r.claims[lock] == nil {
			r.claims[lock] = c
		}
		if a.att != nil {
			a.att.claim = c
		}
		return
	}
	for _, exec := range kw.effects {
		if r.commits[exec] != nil {
			continue // a repeat the ClientRequestToken answered without applying
		}
		claimAt := now
		if c := r.claims[lock]; c != nil {
			claimAt = c.at
		}
		r.commits[exec] = &commitRec{exec: exec, lock: lock, pk: kw.pk, at: now, claimAt: claimAt, expS: kw.put.expS}
		r.commitOrder = append(r.commitOrder, r.commits[exec])
	}
}

// checkReplace reports a write or delete that took a record while it was
// live by every clock within the skew bound: an in-progress record before
// its lock's end, a completed one before its exp second had passed.
func (r *run) checkReplace(who, verb string, old *keyState, now time.Time) {
	if old == nil {
		return
	}
	skew := r.sc.maxSkew
	switch old.state {
	case "in_progress":
		if now.UnixMilli() < old.lockExpMs-skew.Milliseconds() {
			r.violate("r", "%s %s the in-progress record %s at %s while its lock %s was live until %s (exp %s, max skew %v)",
				who, verb, old.pk, rel(now), r.lockName(old.lock), msTime(old.lockExpMs), sTime(old.expS), skew)
		}
	case "completed":
		if now.Before(time.Unix(old.expS+1, 0).Add(-skew)) {
			r.violate("r", "%s %s the completed record %s at %s, live until %s (max skew %v)",
				who, verb, old.pk, rel(now), sTime(old.expS+1), skew)
		}
	}
}

// msTime and sTime print epoch times relative to the run's start.
func msTime(ms int64) string { return rel(time.UnixMilli(ms)) }
func sTime(s int64) string   { return rel(time.Unix(s, 0)) }

func rel(t time.Time) string {
	d := t.Sub(epoch)
	if d < 0 {
		return "-" + (-d).String()
	}
	return "+" + d.String()
}
