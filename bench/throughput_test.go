package bench

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/clusterpool/clusterpool/pool"
)

// BenchmarkDialThroughput: 10 000 clusters asked for at once (Probe: a
// dial without a waiting caller), each dial taking 1 ms, with the CPUs idle or saturated by busy goroutines (GOMAXPROCS
// spinners). Reports dials/s until every cluster is connected, and the
// most goroutines seen while the dials were pending: pending dials wait in
// the pool's queue, not on goroutines of their own.
func BenchmarkDialThroughput(b *testing.B) {
	for _, load := range []string{"idle", "saturated"} {
		b.Run("cpu="+load, func(b *testing.B) {
			const clusters = 10_000
			for b.Loop() {
				stop := make(chan struct{})
				var spin sync.WaitGroup
				if load == "saturated" {
					for range runtime.GOMAXPROCS(0) {
						spin.Go(func() { // busy until stop: a CPU-bound neighbour
							for n := 0; ; n++ {
								if n%1024 == 0 && stopped(stop) {
									return
								}
							}
						})
					}
				}
				var connected sync.WaitGroup
				connected.Add(clusters)
				dial := func(ctx context.Context, key string) (*client, error) {
					t := time.NewTimer(time.Millisecond)
					defer t.Stop()
					select {
					case <-t.C:
						return &client{key: key}, nil
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				p, err := pool.New(dial, pool.Options[string, *client]{})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				events := p.Subscribe(ctx)
				go func() {
					for ev := range events {
						if ev.Type == pool.Connected {
							connected.Done()
						}
					}
				}()
				start := time.Now()
				base := runtime.NumGoroutine()
				peak := 0
				for i := range clusters {
					p.Connect(strconv.Itoa(i)) // queued; Connected tells
					if i%500 == 0 {
						peak = max(peak, runtime.NumGoroutine()-base)
					}
				}
				connected.Wait()
				took := time.Since(start)
				cancel()
				p.Close()
				close(stop)
				spin.Wait()
				b.ReportMetric(clusters/took.Seconds(), "dials/s")
				b.ReportMetric(float64(peak), "goroutines")
			}
		})
	}
}

// stopped reports whether stop is closed.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}
