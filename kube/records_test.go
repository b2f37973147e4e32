package kube

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A record's tick and retry are taken once each when due; one not due
// gives the wait until the earliest of them, also when a tick is moved
// later than one the queue still holds (the queue keeps the earliest delay
// of a key, so the caller queues the key again after wait). An empty record
// is forgotten.
func TestRecordsTakeDue(t *testing.T) {
	const s = time.Second
	key := client.ObjectKey{Namespace: "f", Name: "c"}
	t0 := time.Unix(1000, 0)
	var rs records
	rs.schedule(key, false, t0.Add(10*s))
	rs.schedule(key, false, t0.Add(30*s)) // later: the earlier tick stays
	rs.schedule(key, true, t0.Add(5*s))
	for _, step := range []struct {
		at          time.Duration
		tick, retry bool
		wait        time.Duration
	}{
		{0, false, false, 5 * s},
		{5 * s, false, true, 5 * s},
		{10 * s, true, false, 0},
		{11 * s, false, false, 0},
	} {
		d, wait := rs.takeDue(key, t0.Add(step.at))
		if tick, retry := d.tick, d.retry; tick != step.tick || retry != step.retry || wait != step.wait {
			t.Fatalf("at %v: tick %v retry %v wait %v, want %v %v %v", step.at, tick, retry, wait, step.tick, step.retry, step.wait)
		}
	}
	if len(rs.m) != 0 {
		t.Fatalf("%d records left, want none", len(rs.m))
	}
}

// A Secret kept for a dial becomes pending when the dial ends (marked as
// the dial's alone), and only adds its revisions to a Secret the informer
// delivered meanwhile.
func TestRecordsDialEnded(t *testing.T) {
	key := client.ObjectKey{Namespace: "f", Name: "c"}
	var rs records
	if rs.dialEnded(key) {
		t.Fatal("a dial's end with nothing kept left a Secret pending")
	}
	kept := change{s: kubeconfigSecret(key, "A")}
	rs.keep(key, kept)
	if !rs.dialEnded(key) {
		t.Fatal("the kept Secret is not pending after the dial's end")
	}
	if ch, ended, ok := rs.takePending(key); !ok || !ended || ch.s != kept.s {
		t.Fatalf("pending %v ended %v ok %v, want the kept Secret, ended", ch.s, ended, ok)
	}
	rs.keep(key, kept)
	newer := change{s: kubeconfigSecret(key, "B")}
	rs.changed(key, newer)
	rs.dialEnded(key)
	ch, ended, ok := rs.takePending(key)
	if !ok || ended || ch.s != newer.s || len(ch.before) != 1 || ch.before[0] != revisionOf(kept.s) {
		t.Fatalf("pending %v before %v ended %v, want the informer's, after the kept one's revision", ch.s, ch.before, ended)
	}
	if len(rs.m) != 0 {
		t.Fatalf("%d records left, want none", len(rs.m))
	}
}
