package pool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sync/semaphore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errRefused = errors.New("connect: connection refused")

// client is a fake cluster client; closed counts OnClose calls.
type client struct {
	key    string
	id     int32
	closed atomic.Int32
}

// dialReq is one call of the fake dialer, waiting for the test's answer.
type dialReq struct {
	key   string
	ctx   context.Context
	reply chan dialReply
}

type dialReply struct {
	err       error
	panic     any
	nilClient bool // return (nil, nil)
}

// fakeDialer hands every dial to the test through reqs. The dial returns
// when the test answers or the dial's context ends.
type fakeDialer struct {
	reqs     chan *dialReq
	n        atomic.Int32
	mu       sync.Mutex
	made     []*client
	reply    func(key string) *dialReply // if set, answers at once instead of sending on reqs
	stubborn atomic.Bool                 // the dialer ignores its context
}

func newFake() *fakeDialer { return &fakeDialer{reqs: make(chan *dialReq, 1024)} }

func (f *fakeDialer) dial(ctx context.Context, key string) (*client, error) {
	id := f.n.Add(1)
	var rep dialReply
	if f.reply != nil {
		if r := f.reply(key); r != nil {
			rep = *r
		} else {
			return f.newClient(key, id), nil
		}
	} else {
		r := &dialReq{key: key, ctx: ctx, reply: make(chan dialReply, 1)}
		f.reqs <- r
		done := ctx.Done()
		if f.stubborn.Load() {
			done = nil
		}
		select {
		case rep = <-r.reply:
		case <-done:
			return nil, ctx.Err()
		}
	}
	if rep.panic != nil {
		panic(rep.panic)
	}
	if rep.nilClient {
		return nil, nil
	}
	if rep.err != nil {
		return nil, rep.err
	}
	return f.newClient(key, id), nil
}

func (f *fakeDialer) newClient(key string, id int32) *client {
	c := &client{key: key, id: id}
	f.mu.Lock()
	f.made = append(f.made, c)
	f.mu.Unlock()
	return c
}

// next returns the dial in progress; the test must know one is.
func (f *fakeDialer) next(t *testing.T) *dialReq {
	t.Helper()
	select {
	case r := <-f.reqs:
		return r
	default:
		t.Fatal("no dial in progress")
		return nil
	}
}

// noDial fails if a dial is waiting for an answer.
func (f *fakeDialer) noDial(t *testing.T) {
	t.Helper()
	select {
	case r := <-f.reqs:
		t.Fatalf("unexpected dial of %s", r.key)
	default:
	}
}

func (r *dialReq) succeed()        { r.reply <- dialReply{} }
func (r *dialReq) fail(err error)  { r.reply <- dialReply{err: err} }
func (r *dialReq) panicWith(v any) { r.reply <- dialReply{panic: v} }

// reporter is what the checks need of a *testing.T or a *rapid.T.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// checkClosedOnce fails unless every client made was passed to OnClose
// exactly once (call after Close).
func (f *fakeDialer) checkClosedOnce(t reporter) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.made {
		if n := c.closed.Load(); n != 1 {
			t.Errorf("client %s#%d closed %d times, want 1", c.key, c.id, n)
		}
	}
}

// newPool returns a pool over f with OnClose wired to the fake's count; it
// is closed and checked at the end of the test.
func newPool(t *testing.T, f *fakeDialer, o Options[string, *client]) *Pool[string, *client] {
	t.Helper()
	o.OnClose = func(_ string, c *client) { c.closed.Add(1) }
	p, err := New(f.dial, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		checkNoPermitLeak(t, p)
		f.checkClosedOnce(t)
	})
	return p
}

// checkNoPermitLeak fails if any dial holds or waits for a slot once the
// pool is closed.
func checkNoPermitLeak(t reporter, p *Pool[string, *client]) {
	t.Helper()
	if !p.idle() {
		t.Errorf("dial slots held or queued after Close")
	}
}

// getAsync runs Get on a goroutine; the result arrives on the channel.
type getResult struct {
	c   *client
	err error
	at  time.Time
}

func getAsync(ctx context.Context, p *Pool[string, *client], key string) <-chan getResult {
	ch := make(chan getResult, 1)
	go func() {
		c, err := p.Get(ctx, key)
		ch <- getResult{c, err, time.Now()}
	}()
	return ch
}

// subscribe collects events; drain returns those received so far.
type events struct {
	mu  sync.Mutex
	got []Event[string]
}

func subscribe(ctx context.Context, p *Pool[string, *client]) *events {
	return collect(p.Subscribe(ctx))
}

// subscribeRequeue is subscribe through SubscribeRequeue.
func subscribeRequeue(ctx context.Context, p *Pool[string, *client]) *events {
	return collect(p.SubscribeRequeue(ctx))
}

func collect(ch <-chan Event[string]) *events {
	ev := &events{}
	go func() {
		for e := range ch {
			ev.mu.Lock()
			ev.got = append(ev.got, e)
			ev.mu.Unlock()
		}
	}()
	return ev
}

func (ev *events) types() []EventType {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	var ts []EventType
	for _, e := range ev.got {
		ts = append(ts, e.Type)
	}
	return ts
}

// idle reports whether no dial holds or waits for a slot.
func (p *Pool[K, C]) idle() bool {
	l := &p.lanes
	l.mu.Lock()
	defer l.mu.Unlock()
	full := func(s *semaphore.Weighted, n int64) bool {
		if !s.TryAcquire(n) {
			return false
		}
		s.Release(n)
		return true
	}
	return l.queue.Len() == 0 && l.suspectQ.Len() == 0 && l.running.Len() == 0 && l.slowRun.Len() == 0 &&
		full(l.total, p.opts.MaxTotalDials) && full(l.suspect, suspectCap(p.opts.MaxTotalDials)) &&
		full(l.slow, p.opts.MaxSlowDials)
}
