package clustercache

import (
	"context"
	"errors"
	"fmt"
	"testing"
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
// Cluster API's sentinel and the pool's sentinel for its state.
func TestNotConnected(t *testing.T) {
	next := time.Now().Add(time.Minute)
	tests := []struct {
		name   string
		st     pool.ClusterState
		closed bool
		want   error
	}{
		{name: "closed", st: pool.ClusterState{Known: true, Connected: true}, closed: true, want: pool.ErrClosed},
		{name: "unknown", want: pool.ErrRemoved},
		{name: "open", st: pool.ClusterState{Known: true, Breaker: breaker.StateOpen, NextProbe: next}, want: pool.ErrCircuitOpen},
		{name: "half-open", st: pool.ClusterState{Known: true, Breaker: breaker.StateHalfOpen, Dialing: true}, want: pool.ErrCircuitOpen},
		{name: "dialing", st: pool.ClusterState{Known: true, Dialing: true}, want: pool.ErrWaitTimeout},
		{name: "failed", st: pool.ClusterState{Known: true, ConsecutiveFailures: 1}, want: pool.ErrDialFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := notConnected("getting client", testKey, tt.st, tt.closed)
			if !errors.Is(err, capiclustercache.ErrClusterNotConnected) || !errors.Is(err, tt.want) {
				t.Fatalf("%v does not match ErrClusterNotConnected and %v", err, tt.want)
			}
			if d, ok := pool.RetryAfter(err); ok != (tt.want == pool.ErrCircuitOpen && !tt.st.NextProbe.IsZero()) || d > time.Minute {
				t.Fatalf("RetryAfter = %v, %v", d, ok)
			}
		})
	}
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
