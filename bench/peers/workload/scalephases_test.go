package workload

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// switchable is a Strategy.Connected whose answers the test sets.
type switchable struct {
	mu sync.Mutex
	up map[string]bool
}

func (s *switchable) set(v bool, names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		s.up[n] = v
	}
}

func (s *switchable) connected(_ context.Context, k client.ObjectKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.up[k.Name]
}

// detect samples only the sampled clusters, asks for the faults after one
// sample, and ends as soon as every cluster it saw connected was reported
// not connected; a cluster never connected is not waited for.
func TestDetectEndsWhenEverySampledClusterIsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := &switchable{up: map[string]bool{"a": true, "b": true, "c": true, "x": true}}
		plan := Plan{Namespace: "ns", Roles: map[string]Role{"a": Healthy, "b": Healthy, "c": Healthy, "d": Healthy, "x": Healthy},
			SampleConnected: 50 * time.Millisecond, SampleClusters: []string{"a", "b", "c", "d"}, DetectWithin: time.Minute}
		start := time.Now()
		faults := func() {
			sw.set(false, "a", "b", "x")
			go func() {
				time.Sleep(3 * time.Second)
				sw.set(false, "c")
			}()
		}
		av := detect(context.Background(), plan, Strategy{Connected: sw.connected}, faults)
		if d := time.Since(start); d < 3*time.Second || d > 3*time.Second+100*time.Millisecond {
			t.Fatalf("detect took %v, want c's 3 s and a sample", d)
		}
		if _, ok := av.FirstConnectedUnixMs["x"]; ok {
			t.Fatal("sampled x, which is not in SampleClusters")
		}
		if c := av.NotConnected["c"]; len(av.NotConnected["a"]) != 1 || len(c) != 1 || c[0][0]-start.UnixMilli() < 3000 || c[0][0]-start.UnixMilli() > 3050 {
			t.Fatalf("not connected: %v", av.NotConnected)
		}
	})
}

// A sampled cluster never reported down ends detect after DetectWithin.
func TestDetectIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := &switchable{up: map[string]bool{"a": true}}
		plan := Plan{Namespace: "ns", Roles: map[string]Role{"a": Healthy}, SampleConnected: 50 * time.Millisecond, DetectWithin: 3 * time.Minute}
		start := time.Now()
		av := detect(context.Background(), plan, Strategy{Connected: sw.connected}, func() { time.Sleep(time.Second) })
		if d := time.Since(start); d != 3*time.Minute+time.Second {
			t.Fatalf("detect took %v, want the second of faults and 3 min", d)
		}
		if len(av.NotConnected) != 0 {
			t.Fatalf("not connected: %v", av.NotConnected)
		}
		if a := detect(context.Background(), Plan{}, Strategy{}, nil); a != nil {
			t.Fatalf("without sampling: %+v", a)
		}
	})
}

// The load's calls go to the clusters in turn, by name.
func TestLoadGetSpreadsOverClusters(t *testing.T) {
	var got []string
	s := Strategy{Get: func(_ context.Context, k client.ObjectKey) (client.Client, error) {
		got = append(got, k.Namespace+"/"+k.Name)
		return nil, errors.New("not connected")
	}}
	get := loadGet(Plan{Namespace: "ns", Roles: map[string]Role{"b": Healthy, "a": Healthy, "c": Healthy}}, s)
	for k := range 4 {
		if err := get(context.Background(), k); err == nil {
			t.Fatal("no error")
		}
	}
	if want := []string{"ns/a", "ns/b", "ns/c", "ns/a"}; !slices.Equal(got, want) {
		t.Fatalf("clusters %v, want %v", got, want)
	}
}

// afterIdle does nothing outside a scale run, and reports the load's
// summaries under load's names in a scale run.
func TestAfterIdleReportsTheLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := Strategy{Get: func(context.Context, client.ObjectKey) (client.Client, error) { return nil, errors.New("down") }}
		plan := Plan{Roles: map[string]Role{"a": Healthy}, LoadRate: 10, LoadWindow: time.Second}
		var f Figures
		afterIdle(context.Background(), plan, s, &f)
		if f.Timings != nil {
			t.Fatalf("not a scale run: %v", f.Timings)
		}
		plan.Idle = time.Second
		afterIdle(context.Background(), plan, s, &f)
		if f.Timings["load_get"].N != 10 || f.Timings["load_get_failed"].N != 10 {
			t.Fatalf("timings %+v", f.Timings)
		}
	})
}
