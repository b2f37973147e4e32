package shard

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// interval is one replica's ownership of one cluster: [from, to), to zero
// while it lasts.
type interval struct {
	replica  string
	from, to time.Time
}

// observer records every replica's ownership intervals from their events.
type observer struct {
	mu        sync.Mutex
	intervals map[client.ObjectKey][]interval
	problems  []string
	wg        sync.WaitGroup
}

func newObserver() *observer {
	return &observer{intervals: map[client.ObjectKey][]interval{}}
}

// watch records the events of replica name until events is closed.
func (o *observer) watch(name string, events <-chan Event) {
	o.wg.Go(func() {
		for ev := range events {
			o.record(name, ev)
		}
	})
}

func (o *observer) record(name string, ev Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ivs := o.intervals[ev.Key]
	open := -1
	for i, iv := range ivs {
		if iv.replica == name && iv.to.IsZero() {
			open = i
		}
	}
	switch {
	case ev.Type == Gained && open < 0:
		o.intervals[ev.Key] = append(ivs, interval{replica: name, from: ev.Time})
	case ev.Type == Lost && open >= 0 && !ev.Time.Before(ivs[open].from):
		ivs[open].to = ev.Time
	default:
		o.problems = append(o.problems, name+": "+ev.Type.String()+" "+ev.Key.String()+" out of order")
	}
}

// lastGain is the latest start of an interval of replica name for any of
// keys (zero if none).
func (o *observer) lastGain(keys []client.ObjectKey, name string) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	var last time.Time
	for _, k := range keys {
		for _, iv := range o.intervals[k] {
			if iv.replica == name && iv.from.After(last) {
				last = iv.from
			}
		}
	}
	return last
}

// lastEnd is the latest end of any interval of replica name, and whether
// one is still open.
func (o *observer) lastEnd(name string) (last time.Time, open bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ivs := range o.intervals {
		for _, iv := range ivs {
			if iv.replica != name {
				continue
			}
			if iv.to.IsZero() {
				open = true
			} else if iv.to.After(last) {
				last = iv.to
			}
		}
	}
	return last, open
}

// verify waits for the subscriptions to end (cancel their context first)
// and fails t if two replicas' intervals of one cluster overlap, if the
// events were inconsistent, or if an interval is still open.
func (o *observer) verify(t *testing.T, cancel context.CancelFunc) {
	t.Helper()
	cancel()
	o.wg.Wait()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range o.problems {
		t.Error(p)
	}
	n := 0
	for k, ivs := range o.intervals {
		sort.Slice(ivs, func(i, j int) bool { return ivs[i].from.Before(ivs[j].from) })
		for i, a := range ivs {
			n++
			if a.to.IsZero() {
				t.Errorf("%v: %s's ownership from %v never ended", k, a.replica, a.from)
				continue
			}
			for _, b := range ivs[i+1:] {
				if b.replica != a.replica && b.from.Before(a.to) {
					t.Errorf("%v owned by %s [%v, %v) and by %s from %v", k, a.replica,
						a.from.Format(time.StampMilli), a.to.Format(time.StampMilli), b.replica, b.from.Format(time.StampMilli))
				}
			}
		}
	}
	if n == 0 {
		t.Error("the observer recorded no ownership at all")
	}
	t.Logf("observer: %d ownership intervals of %d clusters, none overlapping", n, len(o.intervals))
}
