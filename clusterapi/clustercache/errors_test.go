package clustercache

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	capiclustercache "sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/kube"
	"github.com/clusterpool/clusterpool/pool"
)

var testKey = client.ObjectKey{Namespace: "ns", Name: "c1"}

// TestNotConnected: the error of a cluster without a client matches
// Cluster API's sentinel and the pool's sentinel for its state, and, but
// for a closed cache or an unknown cluster, carries a RetryAfter, so that
// kube.Requeue requeues rather than returning it: the next probe of an
// open breaker, at most the dial timeout while a dial or the half-open
// probe is out, the retry delay after a failed dial.
func TestNotConnected(t *testing.T) {
	const dialTimeout, retryDelay = 10 * time.Second, 5 * time.Second
	next := time.Now().Add(time.Minute)
	tests := []struct {
		name   string
		st     pool.ClusterState
		closed bool
		want   error
		// retry bounds RetryAfter from above (and then from below by
		// retry minus a minute's slack, for the open breaker); 0: none.
		retry time.Duration
	}{
		{name: "closed", st: pool.ClusterState{Known: true, Connected: true}, closed: true, want: pool.ErrClosed},
		{name: "unknown", want: pool.ErrRemoved},
		{name: "open", st: pool.ClusterState{Known: true, Breaker: breaker.StateOpen, NextProbe: next},
			want: pool.ErrCircuitOpen, retry: time.Minute},
		{name: "open, probe due", st: pool.ClusterState{Known: true, Breaker: breaker.StateOpen, NextProbe: time.Now().Add(-time.Second)},
			want: pool.ErrCircuitOpen, retry: dialTimeout},
		{name: "half-open", st: pool.ClusterState{Known: true, Breaker: breaker.StateHalfOpen, Dialing: true},
			want: pool.ErrCircuitOpen, retry: dialTimeout},
		{name: "dialing", st: pool.ClusterState{Known: true, Dialing: true}, want: pool.ErrWaitTimeout, retry: dialTimeout},
		{name: "failed", st: pool.ClusterState{Known: true, ConsecutiveFailures: 1}, want: pool.ErrDialFailed, retry: retryDelay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := notConnected("getting client", testKey, tt.st, tt.closed, dialTimeout, retryDelay)
			if !errors.Is(err, capiclustercache.ErrClusterNotConnected) || !errors.Is(err, tt.want) {
				t.Fatalf("%v does not match ErrClusterNotConnected and %v", err, tt.want)
			}
			d, ok := pool.RetryAfter(err)
			if ok != (tt.retry > 0) || d > tt.retry || (ok && d < tt.retry-time.Minute/2) {
				t.Fatalf("RetryAfter = %v, %v; want one of at most %v", d, ok, tt.retry)
			}
			res, rerr := kube.Requeue(err)
			if (rerr == nil) != ok || (ok && res.RequeueAfter != d.Round(0) && res.RequeueAfter <= 0) {
				t.Fatalf("kube.Requeue = %+v, %v", res, rerr)
			}
		})
	}
}

// TestRetryAfterWhileHalfOpen: on a real pool whose breaker is half-open,
// its probe out, GetClient's and GetUncachedClient's errors requeue
// (kube.Requeue) within the probe's deadline instead of being returned.
func TestRetryAfterWhileHalfOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const dialTimeout = 10 * time.Second
		probing, release := make(chan struct{}), make(chan struct{})
		var dials atomic.Int32
		dial := func(ctx context.Context, _ client.ObjectKey) (*kube.Cluster, error) {
			if dials.Add(1) == 1 {
				return nil, errors.New("connection refused")
			}
			close(probing)
			select {
			case <-release:
				return nil, errors.New("connection refused")
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		p, err := pool.New(dial, pool.Options[client.ObjectKey, *kube.Cluster]{DialTimeout: dialTimeout,
			Breaker: breaker.Settings{ConsecutiveFailures: 1, OpenTimeout: time.Second, DisableJitter: true}})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		defer close(release)
		cc := &clusterCache{pool: p, dialTimeout: dialTimeout}
		if _, err := p.Get(context.Background(), testKey); err == nil { // fails: the breaker opens for 1 s
			t.Fatal("the first dial succeeded")
		}
		<-probing // the pool's probe, 1 s later
		synctest.Wait()
		if st := p.State(testKey); st.Breaker != breaker.StateHalfOpen || !st.Dialing {
			t.Fatalf("state %+v, want half-open with its probe out", st)
		}
		_, errClient := cc.GetClient(context.Background(), testKey)
		_, errUncached := cc.GetUncachedClient(context.Background(), testKey)
		for _, err := range []error{errClient, errUncached} {
			res, rerr := kube.Requeue(err)
			if rerr != nil || res.RequeueAfter <= 0 || res.RequeueAfter > dialTimeout {
				t.Fatalf("kube.Requeue(%v) = %+v, %v; want a requeue within %v", err, res, rerr, dialTimeout)
			}
		}
	})
}

// failing is a client whose every call fails with err.
type failing struct {
	client.Client
	err error
}

func (f failing) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return f.err
}

func (f failing) Create(context.Context, client.Object, ...client.CreateOption) error { return f.err }

// TestGuardedClient: the request guard's errors on an established client
// match ErrClusterNotConnected too; other errors are left alone.
func TestGuardedClient(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "n1")
	for _, tt := range []struct {
		err          error
		notConnected bool
	}{
		{fmt.Errorf("get: %w", &pool.Error{Kind: pool.ErrCircuitOpen, Cluster: "ns/c1"}), true},
		{fmt.Errorf("get: %w", kube.ErrClusterStopped), true},
		{fmt.Errorf("get: %w", kube.ErrBulkheadFull), true},
		{fmt.Errorf("get: %w", kube.ErrFirstByteTimeout), true},
		{notFound, false},
		{nil, false},
	} {
		c := guard(failing{Client: fake.NewClientBuilder().Build(), err: tt.err}, testKey)
		for op, err := range map[string]error{"Get": c.Get(context.Background(), testKey, nil), "Create": c.Create(context.Background(), nil)} {
			if errors.Is(err, capiclustercache.ErrClusterNotConnected) != tt.notConnected {
				t.Errorf("%s: %v: matches ErrClusterNotConnected = %v, want %v", op, err, !tt.notConnected, tt.notConnected)
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("%s: %v no longer matches %v", op, err, tt.err)
			}
		}
	}
	if err := guard(failing{err: notFound}, testKey).Get(context.Background(), testKey, nil); !apierrors.IsNotFound(err) {
		t.Errorf("a NotFound is no longer one: %v", err)
	}
}
