package bench

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/pool"
)

type client struct{ key string }

func newClient(_ context.Context, key string) (*client, error) { return &client{key: key}, nil }

const hitKey = "default/workload-1"

// getter is the lookup under test.
type getter func(ctx context.Context, key string) (*client, error)

func hitGetters(b *testing.B) map[string]getter {
	var m sync.Map
	m.Store(hitKey, &client{key: hitKey})
	syncMap := func(_ context.Context, key string) (*client, error) {
		v, _ := m.Load(key)
		return v.(*client), nil
	}
	cct := NewCCT(newClient)
	p, err := pool.New(newClient, pool.Options[string, *client]{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	for _, g := range []getter{cct.Get, p.Get} {
		if _, err := g(context.Background(), hitKey); err != nil {
			b.Fatal(err)
		}
	}
	return map[string]getter{"syncmap": syncMap, "cct": cct.Get, "clusterpool": p.Get}
}

var impls = []string{"syncmap", "cct", "clusterpool"}

// BenchmarkHit is Get for a connected cluster: serial, and from every
// P at once. syncmap is the floor; cct is ClusterCacheTracker's RWMutex map.
func BenchmarkHit(b *testing.B) {
	getters := hitGetters(b)
	ctx := context.Background()
	for _, impl := range impls {
		get := getters[impl]
		b.Run("mode=serial/impl="+impl, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := get(ctx, hitKey); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("mode=parallel/impl="+impl, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := get(ctx, hitKey); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

var errRefused = errors.New("connection refused")

// BenchmarkOpenRejection is Get on a cluster whose breaker is open: no dial,
// no wait. gobreaker is gobreaker's own rejection, for reference.
func BenchmarkOpenRejection(b *testing.B) {
	p, err := pool.New(func(context.Context, string) (*client, error) { return nil, errRefused },
		pool.Options[string, *client]{Breaker: breaker.Settings{ConsecutiveFailures: 1, OpenTimeout: time.Hour}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	p.Get(ctx, "dead")
	b.Run("impl=clusterpool", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Get(ctx, "dead"); !errors.Is(err, pool.ErrCircuitOpen) {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=gobreaker", func(b *testing.B) {
		br := gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{Timeout: time.Hour,
			ReadyToTrip: func(gobreaker.Counts) bool { return true }})
		done, _ := br.Allow()
		done(errRefused)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := br.Allow(); err == nil {
				b.Fatal("allowed")
			}
		}
	})
}

// herdDial is the dial of a reachable cluster in the herd benchmark.
const herdDial = 2 * time.Millisecond

// BenchmarkHerd sends 100 concurrent first Gets to a fresh reachable
// cluster per iteration and reports dials, failed callers and
// ErrClusterLocked answers per herd.
func BenchmarkHerd(b *testing.B) {
	const callers = 100
	for _, impl := range []string{"cct", "clusterpool"} {
		b.Run("impl="+impl, func(b *testing.B) {
			var dials atomic.Int64
			dial := func(ctx context.Context, key string) (*client, error) {
				dials.Add(1)
				time.Sleep(herdDial)
				return &client{key: key}, nil
			}
			var get getter
			if impl == "cct" {
				get = NewCCT(dial).Get
			} else {
				p, err := pool.New(dial, pool.Options[string, *client]{})
				if err != nil {
					b.Fatal(err)
				}
				defer p.Close()
				get = p.Get
			}
			var failed, locked atomic.Int64
			n := 0
			for b.Loop() {
				key := "herd-" + strconv.Itoa(n)
				n++
				var start, done sync.WaitGroup
				start.Add(1)
				for range callers {
					done.Go(func() {
						start.Wait()
						_, err := get(context.Background(), key)
						if err != nil {
							failed.Add(1)
						}
						if errors.Is(err, ErrClusterLocked) {
							locked.Add(1)
						}
					})
				}
				start.Done()
				done.Wait()
			}
			b.ReportMetric(float64(dials.Load())/float64(n), "dials/herd")
			b.ReportMetric(float64(failed.Load())/float64(n), "failed/herd")
			b.ReportMetric(float64(locked.Load())/float64(n), "locked/herd")
		})
	}
}
