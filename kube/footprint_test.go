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
	"strconv"
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

// BenchmarkClusterFootprint measures what a connected cluster keeps (the
// live heap, B/cluster; goroutines and their stacks) and what connecting
// it allocated (alloc-B/cluster: garbage, which grows the heap to its GC
// goal), per cluster of footprintFleet clusters each watching Nodes and
// having read a ConfigMap once, as bench/peers' scale runs do. impl=client-go is bench/peers/floor's bare
// client-go cluster (one clientset, one Node informer); impl=dialer a
// Dialer's Cluster with default options, impl=dynamic-mapper the same
// with a controller-runtime dynamic RESTMapper per cluster.
func BenchmarkClusterFootprint(b *testing.B) {
	work := suite.Need(b)[1]
	b.Run("impl=client-go", func(b *testing.B) {
		for b.Loop() {
			connect, stop := clientGoFleet(b, work)
			footprint(b, connect)
			stop()
		}
	})
	dialer := func(opts DialerOptions) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				connect, stop := dialerFleet(b, work, opts)
				footprint(b, connect)
				stop()
			}
		}
	}
	b.Run("impl=dialer", dialer(DialerOptions{}))
	b.Run("impl=dynamic-mapper", dialer(DialerOptions{MapperProvider: apiutil.NewDynamicRESTMapper}))
}

// extraGoroutines is how many goroutines a Dialer's Cluster watching Nodes
// keeps beyond bench/peers/floor's bare client-go cluster (9 with
// client-go v0.36): controller-runtime's cache blocked in Informers.Start
// until Stop (Dial's goroutine), its informer's syncs.MergeChans, and the
// context package's goroutine that passes the informer's cancellation
// (client-go's wait.ContextForChannel, which the context package cannot
// reach) to the context the transport chain derives for the watch (the
// guard's flight; with rotating credentials generation.send derives one
// too, from the flight's, which costs none).
const extraGoroutines = 3

// A connected Cluster keeps no goroutine beyond client-go's but
// extraGoroutines.
func TestDialGoroutinesPerCluster(t *testing.T) {
	needEnvtest(t)
	const n = 20
	connect, stop := clientGoFleet(t, workCfg)
	floor := goroutinesPerCluster(t, n, connect)
	stop()
	connect, stop = dialerFleet(t, workCfg, DialerOptions{})
	defer stop()
	got := goroutinesPerCluster(t, n, connect)
	t.Logf("goroutines per cluster: %.1f, client-go's %.1f", got, floor)
	if got > floor+extraGoroutines+0.5 {
		t.Fatalf("a Cluster keeps %.1f goroutines, client-go %.1f: more than %d extra", got, floor, extraGoroutines)
	}
}

// goroutinesPerCluster connects n clusters with connect, waits until each
// watches, and returns the goroutines they added, per cluster.
func goroutinesPerCluster(t *testing.T, n int, connect func(int)) float64 {
	t.Helper()
	g, watches := runtime.NumGoroutine(), goroutinesIn(t, "cache.handleAnyWatch")
	for i := range n {
		connect(i)
	}
	for deadline := time.Now().Add(30 * time.Second); goroutinesIn(t, "cache.handleAnyWatch") < watches+n; {
		if time.Now().After(deadline) {
			t.Fatal("the watches did not start within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return float64(runtime.NumGoroutine()-g) / float64(n)
}

// goroutinesIn counts the goroutines with fn on their stack.
func goroutinesIn(t *testing.T, fn string) int {
	t.Helper()
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	_, entries, _ := strings.Cut(b.String(), "\n") // the header line
	n := 0
	for _, e := range strings.Split(entries, "\n\n") {
		if !strings.Contains(e, fn) {
			continue
		}
		count, _, _ := strings.Cut(e, " @")
		c, err := strconv.Atoi(count)
		if err != nil {
			t.Fatalf("goroutine profile entry %q: %v", e, err)
		}
		n += c
	}
	return n
}

// footprint connects footprintFleet clusters with connect and reports the
// live heap, goroutines and allocations they added, per cluster; with
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
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/footprintFleet, "alloc-B/cluster")
	if *footprintProfile == "" {
		return
	}
	prefix := *footprintProfile + "." + strings.TrimPrefix(path.Base(b.Name()), "impl=")
	for name, file := range map[string]string{"heap": prefix + ".heap", "goroutine": prefix + ".goroutines"} {
		f, err := os.Create(file)
		if err != nil {
			b.Fatal(err)
		}
		err = pprof.Lookup(name).WriteTo(f, map[string]int{"heap": 1, "goroutine": 2}[name]) // 2: each with its creator
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// clientGoFleet returns connect, which connects bare client-go clusters
// (clientGoCluster) to work, and stop, which stops them.
func clientGoFleet(tb testing.TB, work *rest.Config) (connect func(int), stop func()) {
	done := make(chan struct{})
	var runs sync.WaitGroup
	conns := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	return func(int) { clientGoCluster(tb, work, conns, &runs, done) }, func() {
		close(done)
		runs.Wait()
		conns.CloseAll()
	}
}

// dialerFleet returns connect, which dials cluster i of work with a Dialer
// of opts watching Nodes (dialCluster), and stop, which stops them.
func dialerFleet(tb testing.TB, work *rest.Config, opts DialerOptions) (connect func(int), stop func()) {
	opts.WatchTypes = []client.Object{&corev1.Node{}}
	d, err := NewDialer(ConfigFunc(func(context.Context, client.ObjectKey) (*rest.Config, error) {
		return rest.CopyConfig(work), nil
	}), opts)
	if err != nil {
		tb.Fatal(err)
	}
	var clusters []*Cluster
	return func(i int) { clusters = append(clusters, dialCluster(tb, d, i)) }, func() {
		for _, c := range clusters {
			c.Stop()
		}
	}
}

// dialCluster dials cluster i with d and reads a ConfigMap through its
// uncached client.
func dialCluster(b testing.TB, d *Dialer, i int) *Cluster {
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
func clientGoCluster(b testing.TB, work *rest.Config, conns *connrotation.Dialer, runs *sync.WaitGroup, stop chan struct{}) {
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
