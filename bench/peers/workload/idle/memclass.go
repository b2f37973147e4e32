package idle

import (
	"runtime/metrics"
	"strings"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// Memory is where a process's memory is at one moment (bench/peers/protocol).
type Memory = protocol.Memory

const (
	classPrefix = "/memory/classes/"
	classTotal  = classPrefix + "total:bytes"
	heapGoal    = "/gc/heap/goal:bytes"
)

// classBuckets maps runtime/metrics' memory classes (other than total) to
// Memory's buckets by name prefix.
var classBuckets = []struct {
	prefix string
	bucket func(*Memory) *int64
}{
	{"heap/objects:", func(m *Memory) *int64 { return &m.ObjectsBytes }},
	{"heap/free:", headroom},
	{"heap/unused:", headroom},
	{"heap/released:", func(m *Memory) *int64 { return &m.ReleasedBytes }},
	{"heap/stacks:", stacks},
	{"os-stacks:", stacks},
	{"metadata/", runtimeOwn},
	{"profiling/", runtimeOwn},
	{"other:", runtimeOwn},
}

func headroom(m *Memory) *int64   { return &m.HeadroomBytes }
func stacks(m *Memory) *int64     { return &m.StacksBytes }
func runtimeOwn(m *Memory) *int64 { return &m.RuntimeBytes }

// bucketOf is the bucket of memory class name, or nil if no rule has it.
func bucketOf(name string) func(*Memory) *int64 {
	rest, ok := strings.CutPrefix(name, classPrefix)
	if !ok {
		return nil
	}
	for _, c := range classBuckets {
		if strings.HasPrefix(rest, c.prefix) {
			return c.bucket
		}
	}
	return nil
}

// readMemory reads every memory class of runtime/metrics in one read
// (consistent with each other) and the heap goal; rss is the resident set
// read just before. A class no rule has counts in RuntimeBytes.
func readMemory(rss int64) Memory {
	var samples []metrics.Sample
	for _, d := range metrics.All() {
		if strings.HasPrefix(d.Name, classPrefix) || d.Name == heapGoal {
			samples = append(samples, metrics.Sample{Name: d.Name})
		}
	}
	metrics.Read(samples)
	var m Memory
	for _, s := range samples {
		if s.Value.Kind() != metrics.KindUint64 {
			continue
		}
		v := int64(s.Value.Uint64())
		switch bucket := bucketOf(s.Name); {
		case s.Name == classTotal:
			m.TotalBytes = v
		case s.Name == heapGoal:
			m.GoalBytes = v
		case bucket != nil:
			*bucket(&m) += v
		default:
			m.RuntimeBytes += v
		}
	}
	m.OutsideBytes = rss - (m.TotalBytes - m.ReleasedBytes)
	return m
}
