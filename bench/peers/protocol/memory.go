package protocol

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
