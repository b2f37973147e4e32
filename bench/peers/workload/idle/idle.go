// Package idle measures a process that holds its connections and does
// nothing else: the idle window of bench/peers' scale runs. It links no
// Kubernetes library but client-go's metrics hooks, so that the client-go
// floor (bench/peers/floor) and the controller-runtime peers measure
// themselves with the same code.
package idle

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// Marker starts the lines Measure prints on stderr when the idle window
// starts ("<Marker>start") and ends ("<Marker>end"): the driver counts the
// apiservers' requests between them, and the process's connections after
// the end marker, then answers with a line on stdin (see Measure). Await
// prints others.
const Marker = protocol.IdleMarker

// Faults is the marker a scale run's peer prints (Await) once it watches
// its sampled clusters: the driver injects its faults, then answers.
const Faults = protocol.FaultsMarker

// Figures are one idle window's measurements.
type Figures struct {
	// StartUnixMs and EndUnixMs bound the window (wall clock, ms).
	StartUnixMs, EndUnixMs int64
	// CPUSeconds is the process's user and system CPU time in the window.
	CPUSeconds float64
	// RSSBytes, PeakRSSBytes and Goroutines are taken at the window's end;
	// HeapBytes is the live Go heap after a GC that follows.
	RSSBytes, PeakRSSBytes, HeapBytes int64
	Goroutines                        int
	// Requests is how many requests the process sent in the window, as
	// its requests counter says (0 without one).
	Requests uint64
	// Memory is where RSSBytes is, read with it (before the GC).
	Memory Memory
}

// Measure prints the start marker, waits d, prints the end marker, waits
// until the driver has counted the process's connections (a line or EOF on
// stdin, at most ackTimeout) and returns the window's figures. requests,
// if not nil, counts the process's requests so far.
func Measure(d time.Duration, requests func() uint64) Figures {
	if requests == nil {
		requests = func() uint64 { return 0 }
	}
	start, cpu0, req0 := time.Now(), cpuTime(), requests()
	fmt.Fprintln(os.Stderr, Marker+"start")
	time.Sleep(d)
	end, cpu1, req1 := time.Now(), cpuTime(), requests()
	Await("end", ackTimeout)
	f := Figures{StartUnixMs: start.UnixMilli(), EndUnixMs: end.UnixMilli(), CPUSeconds: (cpu1 - cpu0).Seconds(),
		Goroutines: runtime.NumGoroutine(), Requests: req1 - req0}
	f.RSSBytes, f.PeakRSSBytes = RSS()
	f.Memory = readMemory(f.RSSBytes)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f.HeapBytes = int64(ms.HeapAlloc)
	return f
}

// ackTimeout bounds the wait for the driver's answer to the end marker.
const ackTimeout = time.Minute

// Await prints Marker+name on stderr and returns once the driver answers
// (a line on stdin, or its end), or after timeout.
func Await(name string, timeout time.Duration) {
	fmt.Fprintln(os.Stderr, Marker+name)
	waitAck(stdinLines(), timeout)
}

// stdinLines is a channel that gets a value for every line of stdin and is
// closed at its end: one reader for every Await, so that an answer that
// comes after its Await timed out is not lost in a reader's buffer.
var stdinLines = sync.OnceValue(func() <-chan struct{} { return lines(os.Stdin) })

// lines sends a value on the channel it returns for every line of r, and
// closes it when r ends.
func lines(r io.Reader) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		br := bufio.NewReader(r)
		for {
			if _, err := br.ReadString('\n'); err != nil {
				return
			}
			ch <- struct{}{}
		}
	}()
	return ch
}

// waitAck returns once acks gives a value or is closed, or after timeout.
func waitAck(acks <-chan struct{}, timeout time.Duration) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-acks:
	case <-t.C:
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// WriteHeapProfile writes the heap profile (live objects as of the last
// GC) to file.
func WriteHeapProfile(file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
