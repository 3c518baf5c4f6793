package sim

import (
	"container/heap"
	"context"
	"math/rand/v2"
	"runtime/debug"
	"time"
)

// scheduler runs actors cooperatively on virtual time: exactly one actor
// goroutine runs at a time, and it runs until it parks (sleep) or ends.
// The next to run is the earliest wake-up, ties broken by the order in
// which they were scheduled, so a run depends only on its scenario.
type scheduler struct {
	now     time.Time // true virtual time
	q       wakeHeap
	seq     uint64
	parked  chan struct{} // the running actor hands control back here
	onPanic func(actor string, p any, stack []byte)
}

func newScheduler(epoch time.Time) *scheduler {
	return &scheduler{now: epoch, parked: make(chan struct{})}
}

// wake is one entry of the queue: resume actor a, or call fn on the
// scheduler's goroutine (a scheduler-level event: an arrival, a crash, a
// TTL pass).
type wake struct {
	at  time.Time
	seq uint64
	a   *actor
	fn  func()
}

type wakeHeap []wake

func (h wakeHeap) Len() int { return len(h) }
func (h wakeHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h wakeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)   { *h = append(*h, x.(wake)) }
func (h *wakeHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	*h = old[:len(old)-1]
	return w
}

func (s *scheduler) push(w wake) {
	if w.at.Before(s.now) {
		w.at = s.now
	}
	s.seq++
	w.seq = s.seq
	heap.Push(&s.q, w)
}

// at schedules fn at virtual time t (not before now).
func (s *scheduler) at(t time.Time, fn func()) { s.push(wake{at: t, fn: fn}) }

// actor is one cooperative goroutine: a client's attempt or a sweep.
type actor struct {
	s      *scheduler
	name   string
	resume chan struct{}
	att    *attempt // nil for a sweep or a TTL pass

	rng    *rand.Rand        // latencies and timeouts of its calls
	calls  int               // HTTP attempts of the SDK so far
	faults map[int]faultKind // by call index
}

// alive reports whether the actor's calls still reach DynamoDB.
func (a *actor) alive() bool { return a.att == nil || a.att.alive() }

type actorKey struct{}

func actorOf(ctx context.Context) *actor {
	a, _ := ctx.Value(actorKey{}).(*actor)
	return a
}

// spawn starts body as a new actor at virtual time t. body's context
// identifies the actor to every DynamoDB call made under it.
func (s *scheduler) spawn(t time.Time, a *actor, body func(ctx context.Context)) {
	a.s = s
	a.resume = make(chan struct{})
	ctx := context.WithValue(context.Background(), actorKey{}, a)
	go func() {
		<-a.resume
		defer func() {
			if p := recover(); p != nil && s.onPanic != nil {
				s.onPanic(a.name, p, debug.Stack())
			}
			s.parked <- struct{}{}
		}()
		body(ctx)
	}()
	s.push(wake{at: t, a: a})
}

// sleep parks the calling actor for d of virtual time.
func (a *actor) sleep(d time.Duration) {
	a.s.push(wake{at: a.s.now.Add(max(d, 0)), a: a})
	a.s.parked <- struct{}{}
	<-a.resume
}

// run processes the queue until it is empty: every actor has ended and no
// event is left.
func (s *scheduler) run() {
	for s.q.Len() > 0 {
		w := heap.Pop(&s.q).(wake)
		if w.at.After(s.now) {
			s.now = w.at
		}
		if w.fn != nil {
			w.fn()
			continue
		}
		w.a.resume <- struct{}{}
		<-s.parked
	}
}
