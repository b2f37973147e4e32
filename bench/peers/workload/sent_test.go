package workload

import (
	"context"
	"reflect"
	"testing"
	"time"

	"k8s.io/client-go/tools/metrics"
)

// recordingResult is a metrics.ResultMetric that counts its calls.
type recordingResult struct{ calls int }

func (r *recordingResult) Increment(context.Context, string, string, string) { r.calls++ }

// The counter counts each workload host's requests from its time on, never
// the management cluster's, and passes every call to the hook it replaced.
func TestCountSent(t *testing.T) {
	prev := metrics.RequestResult
	t.Cleanup(func() { metrics.RequestResult = prev })
	next := &recordingResult{}
	metrics.RequestResult = next
	later := countSent("mgmt:1", time.Now().Add(time.Hour))
	metrics.RequestResult.Increment(context.Background(), "200", "GET", "w:1")
	if got := later(); len(got) != 0 {
		t.Fatalf("counted before its time: %v", got)
	}
	counts := countSent("mgmt:1", time.Now())
	for _, host := range []string{"w:1", "w:2", "mgmt:1", "w:1"} {
		metrics.RequestResult.Increment(context.Background(), "<error>", "GET", host)
	}
	if want := map[string]uint64{"w:1": 2, "w:2": 1}; !reflect.DeepEqual(counts(), want) {
		t.Fatalf("counts %v, want %v", counts(), want)
	}
	if next.calls != 5 {
		t.Fatalf("the replaced hook got %d calls, want 5", next.calls)
	}
}
