package shard

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/pool"
)

// benchClusters is the fleet size of the benchmarks.
const benchClusters = 1000

func members(n int) []string {
	m := make([]string, n)
	for i := range m {
		m[i] = fmt.Sprintf("controller-%d", i)
	}
	return m
}

// BenchmarkMembershipChange reassigns 1000 clusters after one replica joins
// (N → N+1) or leaves (N → N−1). moved-frac is the fraction of clusters
// that changed owner; ideal-frac is the minimum, 1/(N+1) for a join and
// 1/N for a leave (the leaver's share). The time is one full reassignment.
func BenchmarkMembershipChange(b *testing.B) {
	keys := testKeys(benchClusters)
	for _, n := range []int{2, 3, 4, 8, 16} {
		for _, change := range []string{"join", "leave"} {
			before, after, ideal := members(n), members(n+1), 1/float64(n+1)
			if change == "leave" {
				before, after, ideal = members(n), members(n)[1:], 1/float64(n)
			}
			b.Run(fmt.Sprintf("%s/replicas=%d", change, n), func(b *testing.B) {
				var moved int
				for b.Loop() {
					moved = 0
					for _, k := range keys {
						if Owner(before, k) != Owner(after, k) {
							moved++
						}
					}
				}
				b.ReportMetric(float64(moved)/benchClusters, "moved-frac")
				b.ReportMetric(ideal, "ideal-frac")
			})
		}
	}
}

// cacheStandIn is what one connected cluster holds in a replica in this
// benchmark: a fixed 32 KiB stand-in for the cluster's informer caches,
// whose real size depends on the watched types and the cluster.
const cacheStandIn = 32 << 10

// BenchmarkReplicaMemory connects each replica's share of 1000 clusters in
// a pool of its own (a client per owned cluster holding a 32 KiB stand-in
// for its caches) and measures the live heap it adds. heap-MiB/replica and
// clusters/replica are the largest replica's; the heap scales with the
// clusters owned, about 1000/N.
func BenchmarkReplicaMemory(b *testing.B) {
	keys := testKeys(benchClusters)
	for _, n := range []int{1, 2, 3, 4, 8} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			m := members(n)
			var maxHeap uint64
			var maxOwned int
			for b.Loop() {
				for _, self := range m {
					heap, owned := replicaHeap(b, m, self, keys)
					maxHeap, maxOwned = max(maxHeap, heap), max(maxOwned, owned)
				}
			}
			b.ReportMetric(float64(maxHeap)/(1<<20), "heap-MiB/replica")
			b.ReportMetric(float64(maxOwned), "clusters/replica")
		})
	}
}

// replicaHeap connects self's clusters in a new pool and returns the heap
// it holds and the number of clusters.
func replicaHeap(b *testing.B, m []string, self string, keys []client.ObjectKey) (uint64, int) {
	before := liveHeap()
	p, err := pool.New(func(_ context.Context, _ client.ObjectKey) ([]byte, error) {
		return make([]byte, cacheStandIn), nil
	}, pool.Options[client.ObjectKey, []byte]{MaxTotalDials: 64})
	if err != nil {
		b.Fatal(err)
	}
	owned := 0
	for _, k := range keys {
		if Owner(m, k) != self {
			continue
		}
		owned++
		if _, err := p.Get(context.Background(), k); err != nil {
			b.Fatal(err)
		}
	}
	after := liveHeap()
	p.Close()
	if after < before {
		return 0, owned
	}
	return after - before, owned
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
