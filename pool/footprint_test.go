package pool

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// entryParts reports whether key's entry holds a breaker and a dial
// semaphore, and whether its settings are the pool's shared ones.
func entryParts(t *testing.T, p *Pool[string, *client], key string) (brk, sem, shared bool) {
	t.Helper()
	v, ok := p.entries.Load(key)
	if !ok {
		t.Fatalf("no entry for %s", key)
	}
	e := v.(*entry[string, *client])
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ls.brk != nil, e.ls.sem != nil, e.set == p.base
}

// A connected key that never failed holds no breaker and no dial
// semaphore, and shares the pool's settings; its first failure makes the
// breaker, which Remove drops again. A key with overrides has its own
// settings.
func TestEntryHoldsOnlyWhatItUses(t *testing.T) {
	f := newFake()
	f.reply = func(key string) *dialReply {
		if key == "bad" {
			return &dialReply{err: errRefused}
		}
		return nil
	}
	p := newPool(t, f, Options[string, *client]{MaxWait: time.Minute, ForKey: func(key string) Overrides {
		if key == "slow" {
			return Overrides{DialTimeout: time.Hour}
		}
		return Overrides{}
	}})
	ctx := context.Background()
	if _, err := p.Get(ctx, "good"); err != nil {
		t.Fatal(err)
	}
	if brk, sem, shared := entryParts(t, p, "good"); brk || sem || !shared {
		t.Fatalf("connected key: breaker %v, semaphore %v, shared settings %v; want false, false, true", brk, sem, shared)
	}
	if _, err := p.Get(ctx, "bad"); !errors.Is(err, ErrDialFailed) {
		t.Fatalf("Get(bad) = %v", err)
	}
	if brk, sem, _ := entryParts(t, p, "bad"); !brk || sem {
		t.Fatalf("failed key: breaker %v, semaphore %v; want true, false", brk, sem)
	}
	if s := p.State("bad"); s.ConsecutiveFailures != 1 || s.Breaker != breaker.StateClosed {
		t.Fatalf("State(bad) = %+v", s)
	}
	p.Report("good", nil) // a success makes nothing
	if brk, _, _ := entryParts(t, p, "good"); brk {
		t.Fatal("a reported success made a breaker")
	}
	p.Report("good", errRefused)
	if brk, _, _ := entryParts(t, p, "good"); !brk || p.State("good").ConsecutiveFailures != 1 {
		t.Fatalf("a reported failure: breaker %v, state %+v", brk, p.State("good"))
	}
	p.Remove("bad")
	p.Connect("bad") // makes the entry again, and dials
	if _, err := p.Get(ctx, "slow"); err != nil {
		t.Fatal(err)
	}
	if _, _, shared := entryParts(t, p, "slow"); shared {
		t.Fatal("a key with overrides shares the pool's settings")
	}
}
