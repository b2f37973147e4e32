package clustercache_test

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BenchmarkGetClient is the hit path of every reconcile: GetClient of a
// connected Cluster (the pool's Peek, and the check that the client was
// dialed for the Cluster now in the manager's cache), with a manager
// cache of every namespace (Cluster API's default) and of one namespace
// (cache.Options.DefaultNamespaces, a cache per namespace).
func BenchmarkGetClient(b *testing.B) {
	for _, bc := range []struct {
		name string
		own  bool
	}{{"all-namespaces", false}, {"one-namespace", true}} {
		b.Run(bc.name, func(b *testing.B) {
			e := newEnvIn(b, "bench-getclient", bc.own)
			cc := e.setup(b, 10, nil)
			e.start(b, cc)
			ctx := context.Background()
			key := client.ObjectKey{Namespace: e.ns, Name: "a"}
			if err := e.createCluster(ctx, key.Name, e.kubeconfig(b, e.hostPort(b)), true); err != nil {
				b.Fatal(err)
			}
			waitConnected(b, cc, key)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := cc.GetClient(ctx, key); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
