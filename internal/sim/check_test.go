package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/idemkey/idemkey/dynamostore"
)

// check runs the invariants that need the whole run: the answers, the
// effect items and the records left at the end. (The history checks, "b"
// and "r", ran as the run went.)
func (r *run) check() {
	effects := map[string]string{} // exec → op
	for _, it := range r.scanAll(effectTable) {
		effects[it.s("exec")] = it.s("op")
	}
	r.fig.commits = len(effects)
	r.checkAnswers()
	r.checkEffects(effects)
	r.checkEnd(effects)
}

// conflicting reports whether another operation uses op's scope and key
// (with another body, hence another fingerprint).
func (r *run) conflicting(op *opSpec) bool {
	for i := range r.sc.ops {
		o := &r.sc.ops[i]
		if o.id != op.id && o.scope == op.scope && o.key == op.key {
			return true
		}
	}
	return false
}

// checkAnswers: every answer is the committed response of an execution of
// the same operation (fresh from this attempt, or a replay of it, byte for
// byte, never past its record's expiry when served from a cache), the
// handler's own 500, a 422 for a key another operation uses, or retryable
// (409, 503, a dropped connection).
func (r *run) checkAnswers() {
	for _, a := range r.attempts {
		ans := a.ans
		switch {
		case ans == nil:
			r.violate("sim", "%s was never answered", a.name)
			continue
		case ans.crashed:
			continue
		}
		switch ans.status {
		case http.StatusConflict, http.StatusServiceUnavailable:
			continue
		case http.StatusUnprocessableEntity:
			if !r.conflicting(a.op) {
				r.violate("c", "%s got 422 although no other request uses its key: %s", a.name, ans.body)
			} else if last := r.lastCommitBefore(pkOf(a.op), ans.at); ans.calls == 0 && last != nil && !ans.procNow.Before(time.Unix(last.expS+1, 0)) {
				r.violate("c", "%s got 422 from p%d's cache at %s (its clock), after the key's last record (%s) expired at %s",
					a.name, a.p.idx, rel(ans.procNow), last.exec, sTime(last.expS+1))
			}
			continue
		case http.StatusCreated, http.StatusInternalServerError:
		default:
			r.violate("c", "%s got status %d: %s", a.name, ans.status, ans.body)
			continue
		}
		var b respBody
		if err := json.Unmarshal(ans.body, &b); err != nil || b.Exec == "" {
			r.violate("c", "%s got %d that no execution answered: %s", a.name, ans.status, ans.body)
			continue
		}
		if b.Op != a.op.id || b.Scope != a.op.scope || b.Key != a.op.key || b.FP != fpOf(a.op) {
			r.violate("d", "%s (scope %s, key %s, op %s) got another request's response: %s", a.name, a.op.scope, a.op.key, a.op.id, ans.body)
			continue
		}
		ex := r.execs[b.Exec]
		if ex == nil {
			r.violate("c", "%s got the response of an unknown execution: %s", a.name, ans.body)
			continue
		}
		if !bytes.Equal(ans.body, ex.body) || ans.status != ex.status {
			r.violate("c", "%s got %d %s, but execution %s answered %d %s", a.name, ans.status, ans.body, ex.id, ex.status, ex.body)
			continue
		}
		if ans.status == http.StatusInternalServerError {
			if ans.replayed || ex.a != a {
				r.violate("c", "%s got execution %s's 500 replayed=%v (a 500 is never stored)", a.name, ex.id, ans.replayed)
			}
			continue
		}
		cm := r.commits[ex.id]
		if cm == nil {
			r.violate("c", "%s got execution %s's 201 (replayed=%v), which was never committed", a.name, ex.id, ans.replayed)
			continue
		}
		if !ans.replayed {
			if ex.a != a {
				r.violate("c", "%s got execution %s's response (by %s) as its own execution", a.name, ex.id, ex.a.name)
			}
			continue
		}
		r.fig.replays++
		if ex.a == a {
			r.violate("c", "%s executed %s and committed it, but its answer is marked %s", a.name, ex.id, "Idempotent-Replayed")
		}
		if ans.calls == 0 && !ans.procNow.Before(time.Unix(cm.expS+1, 0)) {
			r.violate("c", "%s was answered from p%d's cache at %s (its clock) with %s, whose record expired at %s",
				a.name, a.p.idx, rel(ans.procNow), ex.id, sTime(cm.expS+1))
		}
	}
}

// checkEffects: each effect item was committed with its key record, and
// no key's effects were committed twice while the first commit's record
// lived (by any clock within the skew bound).
func (r *run) checkEffects(effects map[string]string) {
	for _, exec := range sortedKeys(effects) {
		if r.commits[exec] == nil {
			r.violate("e", "effect of execution %s (%s) was written without its key record", exec, effects[exec])
		}
	}
	byPK := map[string][]*commitRec{}
	for _, c := range r.commitOrder {
		byPK[c.pk] = append(byPK[c.pk], c)
	}
	for _, pk := range sortedKeys(byPK) {
		cs := byPK[pk]
		for i := 1; i < len(cs); i++ {
			prev, cur := cs[i-1], cs[i]
			if live := time.Unix(prev.expS+1, 0).Add(-r.sc.maxSkew); cur.claimAt.Before(live) {
				r.violate("a", "%s committed twice while its record lived: execution %s (%s) at %s, live until %s; execution %s (%s) claimed at %s, committed at %s",
					pk, prev.exec, r.opOf(prev.exec), rel(prev.at), sTime(prev.expS+1), cur.exec, r.opOf(cur.exec), rel(cur.claimAt), rel(cur.at))
			}
		}
	}
}

// lastCommitBefore returns the last commit on pk applied before t.
func (r *run) lastCommitBefore(pk string, t time.Time) *commitRec {
	var last *commitRec
	for _, c := range r.commitOrder {
		if c.pk == pk && !c.at.After(t) {
			last = c
		}
	}
	return last
}

func (r *run) opOf(exec string) string {
	if ex := r.execs[exec]; ex != nil {
		return ex.a.name
	}
	return "?"
}

// checkEnd: a completed record still live at the end has its effect, and
// the last commit of a key whose record must still be live is that
// record.
func (r *run) checkEnd(effects map[string]string) {
	store := dynamostore.New(r.obs, keyTable, func(o *dynamostore.Options) { o.Now = func() time.Time { return r.s.now } })
	seen := map[string]bool{}
	for i := range r.sc.ops {
		op := &r.sc.ops[i]
		pk := pkOf(op)
		if seen[pk] {
			continue
		}
		seen[pk] = true
		rec, err := store.Get(context.Background(), op.scope, op.key)
		if err != nil && !errors.Is(err, dynamostore.ErrNotFound) {
			r.violate("e", "reading the record of %s at the end: %v", pk, err)
			continue
		}
		exec := ""
		if rec != nil && rec.State == dynamostore.StateCompleted && rec.Response != nil {
			var b respBody
			if json.Unmarshal(rec.Response.Body, &b) != nil || b.Exec == "" {
				r.violate("e", "the completed record of %s stores no execution's response: %q", pk, rec.Response.Body)
				continue
			}
			exec = b.Exec
			if _, ok := effects[exec]; !ok {
				r.violate("e", "the completed record of %s (execution %s) has no effect", pk, exec)
			}
		}
		var last *commitRec
		for _, c := range r.commitOrder {
			if c.pk == pk {
				last = c
			}
		}
		if last == nil {
			continue
		}
		mustLive := time.Unix(last.expS, 0).After(r.s.now.Add(r.sc.maxSkew + time.Second))
		if mustLive && exec != last.exec {
			r.violate("e", "the effect of execution %s of %s lacks its record (live until %s, now %s): the table holds %v",
				last.exec, pk, sTime(last.expS+1), rel(r.s.now), r.describeRecord(rec))
		}
	}
}

func (r *run) describeRecord(rec *dynamostore.Record) string {
	if rec == nil {
		return "no record"
	}
	return string(rec.State) + " record with lock " + r.lockName(rec.LockToken)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
