package workload

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The sampler records, from each cluster's first connected sample on, the
// intervals in which Connected said no (bounded by the samples that saw
// the change; one still open ends at stop), and the unsuccessful
// reconciles the recorder reports.
func TestSamplerRecordsNotConnectedIntervalsAndOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		up := map[string]bool{"a": true}
		set := func(name string, v bool) {
			mu.Lock()
			up[name] = v
			mu.Unlock()
		}
		s := Strategy{Connected: func(_ context.Context, k client.ObjectKey) bool {
			mu.Lock()
			defer mu.Unlock()
			return up[k.Name]
		}}
		plan := Plan{Namespace: "ns", Roles: map[string]Role{"a": Healthy, "b": Healthy}, Objects: 1,
			Bucket: time.Second, SampleConnected: 100 * time.Millisecond}
		rec := NewRecorder(plan)
		t0 := time.Now().UnixMilli()
		sm := startSampler(context.Background(), plan, s, rec)
		time.Sleep(250 * time.Millisecond)
		set("a", false) // seen at 300
		time.Sleep(400 * time.Millisecond)
		set("a", true) // seen at 700
		time.Sleep(200 * time.Millisecond)
		set("b", true) // first connected at 900
		time.Sleep(100 * time.Millisecond)
		rec.Record("a", "a-0", time.Now(), 0, Failed)   // 950
		rec.Record("b", "b-0", time.Now(), 0, Requeued) // 950
		rec.Record("b", "b-0", time.Now(), 0, Succeeded)
		time.Sleep(100 * time.Millisecond)
		set("b", false) // seen at 1100
		time.Sleep(200 * time.Millisecond)
		av := sm.stop() // 1250
		rel := func(ms ...int64) []int64 {
			for i := range ms {
				ms[i] += t0
			}
			return ms
		}
		want := &Availability{SampleMs: 100,
			FirstConnectedUnixMs: map[string]int64{"a": t0, "b": t0 + 900},
			NotConnected:         map[string][][2]int64{"a": {{t0 + 300, t0 + 700}}, "b": {{t0 + 1100, t0 + 1250}}},
			Failed:               map[string][]int64{"a": rel(950)},
			Requeued:             map[string][]int64{"b": rel(950)}}
		if !reflect.DeepEqual(av, want) {
			t.Fatalf("availability\n got %+v\nwant %+v", av, want)
		}
		if got := (*sampler)(nil).stop(); got != nil {
			t.Fatalf("nil sampler: %+v", got)
		}
	})
}

// With a strategy that has a breaker, the sampler records the intervals in
// which it was open from the first sample on, connected or not; one still
// open ends at stop.
func TestSamplerRecordsBreakerOpenIntervals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		open := map[string]bool{"b": true}
		set := func(name string, v bool) {
			mu.Lock()
			open[name] = v
			mu.Unlock()
		}
		s := Strategy{Connected: func(context.Context, client.ObjectKey) bool { return false },
			BreakerOpen: func(k client.ObjectKey) bool {
				mu.Lock()
				defer mu.Unlock()
				return open[k.Name]
			}}
		plan := Plan{Namespace: "ns", Roles: map[string]Role{"a": Gray, "b": Gray}, Objects: 1,
			Bucket: time.Second, SampleConnected: 100 * time.Millisecond}
		t0 := time.Now().UnixMilli()
		sm := startSampler(context.Background(), plan, s, nil)
		time.Sleep(250 * time.Millisecond)
		set("a", true) // seen at 300
		set("b", false)
		time.Sleep(400 * time.Millisecond)
		set("a", false) // seen at 700
		time.Sleep(200 * time.Millisecond)
		set("a", true) // seen at 900
		time.Sleep(150 * time.Millisecond)
		av := sm.stop() // 1000
		want := map[string][][2]int64{"a": {{t0 + 300, t0 + 700}, {t0 + 900, t0 + 1000}}, "b": {{t0, t0 + 300}}}
		if !reflect.DeepEqual(av.BreakerOpen, want) {
			t.Fatalf("breaker open\n got %v\nwant %v", av.BreakerOpen, want)
		}
	})
}

// Without -sample-connected, or a strategy that cannot tell, nothing is
// sampled.
func TestSamplerOff(t *testing.T) {
	plan := Plan{Roles: map[string]Role{"a": Healthy}, Objects: 1, Bucket: time.Second}
	s := Strategy{Connected: func(context.Context, client.ObjectKey) bool { return true }}
	if sm := startSampler(context.Background(), plan, s, NewRecorder(plan)); sm != nil {
		t.Fatal("sampling without -sample-connected")
	}
	plan.SampleConnected = time.Second
	if sm := startSampler(context.Background(), plan, Strategy{}, NewRecorder(plan)); sm != nil {
		t.Fatal("sampling without Strategy.Connected")
	}
}
