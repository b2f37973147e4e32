package workload

import (
	"fmt"
	"os"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/workload/idle"
)

// measureIdle runs a scale run's idle window of d (idle.Measure) and sets
// f's idle figures from it (with PEER_HEAPPROFILE=FILE, it writes the
// heap profile of the idle process to FILE); requests counts the process's requests to
// workload clusters (idle.CountRequests).
func measureIdle(d time.Duration, requests func() uint64, f *Figures) {
	m := idle.Measure(d, requests)
	if file := os.Getenv("PEER_HEAPPROFILE"); file != "" {
		if err := idle.WriteHeapProfile(file); err != nil {
			fmt.Fprintln(os.Stderr, "heap profile:", err)
		}
	}
	f.IdleStartUnixMs, f.IdleEndUnixMs, f.IdleCPUSeconds = m.StartUnixMs, m.EndUnixMs, m.CPUSeconds
	f.IdleRequests, f.Memory = m.Requests, &m.Memory
	f.RSSBytes, f.PeakRSSBytes, f.HeapBytes, f.Goroutines = m.RSSBytes, m.PeakRSSBytes, m.HeapBytes, m.Goroutines
}
