package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// fixedCache is a ClusterCache whose GetClient returns one client, after
// block (if not nil) is closed.
type fixedCache struct {
	clustercache.ClusterCache
	c     client.Client
	block chan struct{}
}

func (f *fixedCache) GetClient(context.Context, client.ObjectKey) (client.Client, error) {
	if f.block != nil {
		<-f.block
	}
	return f.c, nil
}

func node(name, cluster, inc string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{chaosClusterLabel: cluster, chaosIncarnation: inc}}}
}

func clusterObj(name, inc string) *clusterv1.Cluster {
	return &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name, Annotations: map[string]string{chaosIncarnation: inc}}}
}

func scheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := clusterv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// A Node read through cluster c001's client counts as crossed when it is
// another cluster's, or an older incarnation's than the Cluster now; its
// own incarnation's (or a newer one's: the manager's cache lags) does not.
func TestCheckedClientFindsCrossedNodes(t *testing.T) {
	s := scheme(t)
	mgmt := fake.NewClientBuilder().WithScheme(s).WithObjects(clusterObj("c001", "2")).Build()
	remote := fake.NewClientBuilder().WithScheme(s).WithObjects(
		node("own", "c001", "2"), node("newer", "c001", "3"), node("stale", "c001", "1"), node("other", "c002", "2"),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "unmarked"}}).Build()
	k := newChecks(mgmt, time.Minute)
	cc := &checkedCache{ClusterCache: &fixedCache{c: remote}, k: k}
	ctx := t.Context()
	key := client.ObjectKey{Namespace: "fleet", Name: "c001"}
	c, err := cc.GetClient(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"own", "newer", "stale", "other", "unmarked"} {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{}); err != nil {
			t.Fatal(err)
		}
	}
	crossed, hung := k.take()
	if len(hung) != 0 || len(crossed) != 2 || crossed[0].Node != "stale" || crossed[1].Node != "other" || crossed[1].NodeCluster != "c002" {
		t.Fatalf("crossed %+v, hung %+v; want stale and other", crossed, hung)
	}
	if c2, _ := k.take(); len(c2) != 0 {
		t.Fatal("take did not forget")
	}
}

// A call that runs past hungAfter is reported once while it runs, and
// one that ends late without having been seen is reported when it ends.
func TestChecksReportHungCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := newChecks(nil, 10*time.Second)
		block := make(chan struct{})
		cc := &checkedCache{ClusterCache: &fixedCache{block: block}, k: k}
		done := make(chan struct{})
		go func() {
			cc.GetClient(context.Background(), client.ObjectKey{Name: "c007"})
			close(done)
		}()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		k.scan()
		if _, hung := k.take(); len(hung) != 0 {
			t.Fatalf("hung after 5 s of 10: %+v", hung)
		}
		time.Sleep(6 * time.Second)
		k.scan()
		k.scan()
		_, hung := k.take()
		if len(hung) != 1 || hung[0].Cluster != "c007" || hung[0].Op != "GetClient" || hung[0].Ended {
			t.Fatalf("hung %+v, want GetClient of c007 once, running", hung)
		}
		close(block)
		<-done
		if _, hung := k.take(); len(hung) != 0 {
			t.Fatalf("the reported call was reported again when it ended: %+v", hung)
		}
		id := k.begin("Get", client.ObjectKey{Name: "c008"})
		time.Sleep(11 * time.Second)
		k.end(id)
		if _, hung := k.take(); len(hung) != 1 || !hung[0].Ended || hung[0].Seconds < 10 {
			t.Fatalf("hung %+v, want Get of c008, ended after 11 s", hung)
		}
	})
}

// The counter keeps the end of each MachineHealthCheck's last successful
// reconcile once tracking, from controller-runtime's V(5) log line.
func TestCounterTracksSuccesses(t *testing.T) {
	c := newErrorCounter()
	log := c.logger(logr.Discard())
	mhc := log.WithValues("controller", machineHealthCheckController).WithValues(objectKey, klog.KRef("fleet", "c003-chaos"))
	mhc.V(successVerbosity).Info(reconcileSuccessful)
	if got := c.successesSince(time.Time{}); len(got) != 0 {
		t.Fatalf("recorded %v without tracking", got)
	}
	c.trackSuccesses()
	before := time.Now()
	mhc.V(successVerbosity).Info(reconcileSuccessful)
	mhc.V(successVerbosity).Info("something else")
	log.WithValues("controller", "clustercache").V(successVerbosity).Info(reconcileSuccessful, objectKey, klog.KRef("fleet", "x"))
	got := c.successesSince(before.Add(-time.Nanosecond))
	if len(got) != 1 || got["c003-chaos"].IsZero() {
		t.Fatalf("successes %v, want c003-chaos only", got)
	}
	if later := c.successesSince(time.Now().Add(time.Second)); len(later) != 0 {
		t.Fatalf("successes after the last one: %v", later)
	}
}

func TestParseChaosFlags(t *testing.T) {
	p, err := parseFlags([]string{"-kubeconfig", "k", "-chaos", "-sample", "2s"})
	if err != nil || !p.Chaos || p.Sample != 2*time.Second || p.HungAfter != 15*time.Second {
		t.Fatalf("%+v, %v", p, err)
	}
	if _, err := parseFlags([]string{"-kubeconfig", "k", "-chaos", "-sample", "0s"}); err == nil {
		t.Fatal("-sample 0 accepted")
	}
	for addr, ok := range map[string]bool{"127.0.0.1:0": true, "[::1]:6060": true, "0.0.0.0:0": false, ":6060": false, "localhost:0": false} {
		if p, err := parseFlags([]string{"-kubeconfig", "k", "-chaos", "-pprof", addr}); (err == nil) != ok || (ok && p.PProf != addr) {
			t.Errorf("-pprof %s: %v, want accepted %v", addr, err, ok)
		}
	}
}

// TestServePProf: the goroutine profile is served on the address returned,
// until ctx ends.
func TestServePProf(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addr, err := servePProf(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !strings.HasPrefix(string(body), "goroutine profile: total ") {
		t.Fatalf("goroutine profile: %v, %.80q", err, body)
	}
	cancel() // the server closes in ctx's AfterFunc: a request fails soon
	for {
		resp, err := http.Get("http://" + addr + "/debug/pprof/")
		if err != nil {
			return
		}
		resp.Body.Close()
	}
}
