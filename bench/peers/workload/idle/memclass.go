package idle

import (
	"runtime/metrics"
	"strings"
)

// Memory is where a process's memory is at one moment, from runtime/metrics'
// memory classes, in bytes: ObjectsBytes, HeadroomBytes, StacksBytes,
// RuntimeBytes and ReleasedBytes add up to TotalBytes; TotalBytes less
// ReleasedBytes plus OutsideBytes is the resident set it was read with.
type Memory struct {
	// ObjectsBytes: heap objects, live and dead ones no GC has freed yet
	// (heap/objects).
	ObjectsBytes int64 `json:"objects_bytes"`
	// HeadroomBytes: heap memory free or unused in spans and not released to
	// the OS, that the heap grows into (heap/free, heap/unused).
	HeadroomBytes int64 `json:"headroom_bytes"`
	// StacksBytes: goroutine and thread stacks (heap/stacks, os-stacks).
	StacksBytes int64 `json:"stacks_bytes"`
	// RuntimeBytes: the runtime's own structures: span and GC metadata,
	// profiling buckets, trace buffers (metadata/*, profiling/*, other).
	RuntimeBytes int64 `json:"runtime_bytes"`
	// ReleasedBytes: free heap memory released to the OS, not resident
	// (heap/released).
	ReleasedBytes int64 `json:"released_bytes"`
	// TotalBytes: all memory the Go runtime has mapped (total).
	TotalBytes int64 `json:"total_bytes"`
	// OutsideBytes: the resident set less TotalBytes-ReleasedBytes: memory
	// outside the Go runtime (binary, C, vdso) less mapped pages never
	// touched; it may be negative.
	OutsideBytes int64 `json:"outside_bytes"`
	// GoalBytes: the heap size at which the next GC starts (/gc/heap/goal).
	GoalBytes int64 `json:"goal_bytes"`
}

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
