package bench

import (
	"context"
	"flag"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"github.com/clusterpool/clusterpool/pool"
)

// entryProfile, if set, is where BenchmarkEntryFootprint writes a heap
// profile while the pool's entries are live (to see which allocations an
// entry keeps: go tool pprof -sample_index=inuse_space).
var entryProfile = flag.String("entry.heapprofile", "", "write a heap profile of the live clusterpool entries to this file")

// entryFleet is how many clusters BenchmarkEntryFootprint connects.
const entryFleet = 10_000

// trivialClient is the client BenchmarkEntryFootprint's dialer returns: a
// pointer to an 8-byte value, so that the figure is the pool's own.
type trivialClient struct{ id int }

// BenchmarkEntryFootprint measures the pool's bookkeeping per connected
// cluster: the live heap a pool with default Options (but a long MaxWait) holds after
// entryFleet keys each connected once (trivial clients subtracted), as
// B/entry; syncmap is the floor of a key → client map (a sync.Map holding
// the same clients). Issue 27's target for clusterpool is ≤ 500 B.
func BenchmarkEntryFootprint(b *testing.B) {
	ctx := context.Background()
	b.Run("impl=syncmap", func(b *testing.B) {
		for b.Loop() {
			var m sync.Map
			per := heapPerEntry(b, func() {
				for i := range entryFleet {
					m.Store(i, &trivialClient{id: i})
				}
			})
			runtime.KeepAlive(&m)
			b.ReportMetric(per, "B/entry")
		}
	})
	b.Run("impl=clusterpool", func(b *testing.B) {
		for b.Loop() {
			p, err := pool.New(func(_ context.Context, k int) (*trivialClient, error) { return &trivialClient{id: k}, nil },
				pool.Options[int, *trivialClient]{MaxWait: 10 * time.Second}) // only to ride out a loaded machine
			if err != nil {
				b.Fatal(err)
			}
			per := heapPerEntry(b, func() {
				for i := range entryFleet {
					if _, err := p.Get(ctx, i); err != nil {
						b.Fatal(err)
					}
				}
			})
			writeHeapProfile(b, *entryProfile)
			if err := p.Close(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(per, "B/entry")
		}
	})
}

// heapPerEntry returns the live heap fill adds, per entryFleet entries,
// less the trivial clients' own size.
func heapPerEntry(b *testing.B, fill func()) float64 {
	b.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fill()
	runtime.GC()
	runtime.ReadMemStats(&after)
	client := float64(8) // new(trivialClient): one 8-byte size class
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/entryFleet - client
}

// writeHeapProfile writes the heap profile to file, if not empty.
func writeHeapProfile(b *testing.B, file string) {
	b.Helper()
	if file == "" {
		return
	}
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}
