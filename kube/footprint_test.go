package kube

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/connrotation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// footprintProfile, if set, is the prefix of the files where
// BenchmarkClusterFootprint writes, while each implementation's clusters
// are connected, the heap profile (PREFIX.IMPL.heap; run with
// -test.memprofilerate=1 to see small allocations) and the goroutines
// (PREFIX.IMPL.goroutines, as text).
var footprintProfile = flag.String("footprint.heapprofile", "", "write a heap profile of the connected clusters to this file")

// footprintFleet is how many clusters BenchmarkClusterFootprint connects,
// all to the workload apiserver, each on a connection of its own.
const footprintFleet = 50

// BenchmarkClusterFootprint measures what a connected cluster keeps: the
// live heap (B/cluster), goroutines and their stacks per cluster of footprintFleet
// clusters each watching Nodes and having read a ConfigMap once, as
// bench/peers' scale runs do. impl=client-go is bench/peers/floor's bare
// client-go cluster (one clientset, one Node informer); impl=dialer a
// Dialer's Cluster with default options, impl=dynamic-mapper the same
// with a controller-runtime dynamic RESTMapper per cluster.
func BenchmarkClusterFootprint(b *testing.B) {
	work := suite.Need(b)[1]
	b.Run("impl=client-go", func(b *testing.B) {
		for b.Loop() {
			stop := make(chan struct{})
			var runs sync.WaitGroup
			conns := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
			footprint(b, func(int) { clientGoCluster(b, work, conns, &runs, stop) })
			close(stop)
			runs.Wait()
			conns.CloseAll()
		}
	})
	dialer := func(opts DialerOptions) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				opts.WatchTypes = []client.Object{&corev1.Node{}}
				d, err := NewDialer(ConfigFunc(func(context.Context, client.ObjectKey) (*rest.Config, error) {
					return rest.CopyConfig(work), nil
				}), opts)
				if err != nil {
					b.Fatal(err)
				}
				var clusters []*Cluster
				footprint(b, func(i int) { clusters = append(clusters, dialCluster(b, d, i)) })
				for _, c := range clusters {
					c.Stop()
				}
			}
		}
	}
	b.Run("impl=dialer", dialer(DialerOptions{}))
	b.Run("impl=dynamic-mapper", dialer(DialerOptions{MapperProvider: apiutil.NewDynamicRESTMapper}))
}

// footprint connects footprintFleet clusters with connect and reports the
// live heap and goroutines they added, per cluster; with
// -footprint.heapprofile, it writes the profiles then.
func footprint(b *testing.B, connect func(i int)) {
	b.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g := runtime.NumGoroutine()
	for i := range footprintFleet {
		connect(i)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/footprintFleet, "B/cluster")
	b.ReportMetric(float64(runtime.NumGoroutine()-g)/footprintFleet, "goroutines/cluster")
	b.ReportMetric(float64(int64(after.StackInuse)-int64(before.StackInuse))/footprintFleet, "stack-B/cluster")
	if *footprintProfile == "" {
		return
	}
	prefix := *footprintProfile + "." + strings.TrimPrefix(path.Base(b.Name()), "impl=")
	for name, file := range map[string]string{"heap": prefix + ".heap", "goroutine": prefix + ".goroutines"} {
		f, err := os.Create(file)
		if err != nil {
			b.Fatal(err)
		}
		err = pprof.Lookup(name).WriteTo(f, 1)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// dialCluster dials cluster i with d and reads a ConfigMap through its
// uncached client.
func dialCluster(b *testing.B, d *Dialer, i int) *Cluster {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := d.Dial(ctx, client.ObjectKey{Namespace: "footprint", Name: fmt.Sprintf("c%d", i)})
	if err != nil {
		b.Fatal(err)
	}
	err = c.Uncached.Get(ctx, client.ObjectKey{Namespace: "default", Name: "footprint"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		b.Fatalf("Get: %v, want not found", err)
	}
	return c
}

// clientGoCluster connects a bare client-go cluster as bench/peers/floor
// does (its own connection, one clientset, a Node informer running until
// stop closes, in runs) and reads a ConfigMap once; conns dials its
// connection.
func clientGoCluster(b *testing.B, work *rest.Config, conns *connrotation.Dialer, runs *sync.WaitGroup, stop chan struct{}) {
	b.Helper()
	cfg := rest.CopyConfig(work)
	cfg.QPS, cfg.Burst = 20, 30
	cfg.Dial = conns.DialContext
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		b.Fatal(err)
	}
	lw := toolscache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "nodes", "", fields.Everything())
	inf := toolscache.NewSharedIndexInformer(lw, &corev1.Node{}, 0, toolscache.Indexers{})
	runs.Go(func() { inf.Run(stop) })
	if !toolscache.WaitForCacheSync(stop, inf.HasSynced) {
		b.Fatal("node informer did not sync")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "footprint", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		b.Fatalf("Get: %v, want not found", err)
	}
}
