package idle

import (
	"runtime/metrics"
	"strings"
	"testing"
)

// Every memory class of the runtime has a bucket, the buckets add up to
// the runtime's total, the resident set to its non-released part plus
// OutsideBytes, and stacks and heap objects are not empty.
func TestMemoryBucketsSumToTheRuntimeTotal(t *testing.T) {
	for _, d := range metrics.All() {
		if strings.HasPrefix(d.Name, classPrefix) && d.Name != classTotal && bucketOf(d.Name) == nil {
			t.Errorf("memory class %s has no bucket", d.Name)
		}
	}
	rss, _ := RSS()
	m := readMemory(rss)
	if sum := m.ObjectsBytes + m.HeadroomBytes + m.StacksBytes + m.RuntimeBytes + m.ReleasedBytes; sum != m.TotalBytes || sum == 0 {
		t.Errorf("buckets sum to %d, runtime total %d: %+v", sum, m.TotalBytes, m)
	}
	if got := m.TotalBytes - m.ReleasedBytes + m.OutsideBytes; got != rss {
		t.Errorf("resident %d, want the RSS %d: %+v", got, rss, m)
	}
	if m.StacksBytes <= 0 || m.ObjectsBytes <= 0 || m.GoalBytes <= 0 {
		t.Errorf("stacks %d, heap objects %d, goal %d: want them positive", m.StacksBytes, m.ObjectsBytes, m.GoalBytes)
	}
}

func TestBucketOf(t *testing.T) {
	var m Memory
	for name, want := range map[string]*int64{
		"/memory/classes/heap/objects:bytes":        &m.ObjectsBytes,
		"/memory/classes/heap/unused:bytes":         &m.HeadroomBytes,
		"/memory/classes/os-stacks:bytes":           &m.StacksBytes,
		"/memory/classes/metadata/mspan/free:bytes": &m.RuntimeBytes,
		"/memory/classes/heap/released:bytes":       &m.ReleasedBytes,
	} {
		if b := bucketOf(name); b == nil || b(&m) != want {
			t.Errorf("%s: wrong bucket", name)
		}
	}
	for _, name := range []string{classTotal, "/memory/classes/new:bytes", "/gc/heap/objects:objects"} {
		if bucketOf(name) != nil {
			t.Errorf("%s has a bucket", name)
		}
	}
}
