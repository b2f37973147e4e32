package pool_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/pool"
)

// restClient stands in for a cluster client such as a controller-runtime
// client.Client.
type restClient struct{ cluster string }

func ExampleNew() {
	dial := func(ctx context.Context, cluster string) (*restClient, error) {
		// Build the client and check reachability under ctx here.
		return &restClient{cluster: cluster}, nil
	}
	p, err := pool.New(dial, pool.Options[string, *restClient]{
		MaxWait: 50 * time.Millisecond,
		Breaker: breaker.Settings{ConsecutiveFailures: 3, OpenTimeout: 5 * time.Second},
		OnClose: func(cluster string, c *restClient) { fmt.Println("closed", cluster) },
	})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	c, err := p.Get(context.Background(), "default/workload-1")
	if err != nil {
		panic(err)
	}
	fmt.Println("got client for", c.cluster)
	// Output:
	// got client for default/workload-1
	// closed default/workload-1
}

// result stands in for controller-runtime's reconcile.Result.
type result struct{ RequeueAfter time.Duration }

// requeue maps the pool's errors to a requeue, as a reconciler would: a
// cluster that is not ready yet is not an error worth logging.
func requeue(err error) (result, error) {
	if errors.Is(err, pool.ErrWaitTimeout) || errors.Is(err, pool.ErrCircuitOpen) {
		if d, ok := pool.RetryAfter(err); ok {
			return result{RequeueAfter: d}, nil
		}
	}
	return result{}, err // other errors: the controller's rate limiter decides
}

func ExampleRetryAfter() {
	refused := errors.New("connection refused")
	p, _ := pool.New(func(ctx context.Context, cluster string) (*restClient, error) {
		return nil, refused
	}, pool.Options[string, *restClient]{Breaker: breaker.Settings{ConsecutiveFailures: 1, DisableJitter: true}})
	defer p.Close()

	_, err := p.Get(context.Background(), "default/dead")
	fmt.Println(errors.Is(err, pool.ErrDialFailed), errors.Is(err, refused))

	_, err = p.Get(context.Background(), "default/dead") // rejected at once
	res, err := requeue(err)
	fmt.Println(err, res.RequeueAfter.Round(time.Second))
	// Output:
	// true true
	// <nil> 5s
}

// A controller whose source enqueues a cluster's objects on each event
// (kube.Source does this with SubscribeRequeue) marks its Gets with
// Requeued and never waits for a dial: the Get says come back at the
// dial's latest end, and the event brings the object back as soon as the
// dial ended.
func ExamplePool_SubscribeRequeue() {
	release := make(chan struct{})
	p, _ := pool.New(func(ctx context.Context, cluster string) (*restClient, error) {
		<-release // a dial that takes a while
		return &restClient{cluster: cluster}, nil
	}, pool.Options[string, *restClient]{})
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := p.SubscribeRequeue(ctx) // the controller's source

	_, err := p.Get(pool.Requeued(ctx), "default/workload-1")
	res, _ := requeue(err)
	fmt.Println(errors.Is(err, pool.ErrWaitTimeout), "requeue after", res.RequeueAfter.Round(time.Second))

	close(release)
	ev := <-events // the source enqueues the cluster's objects again
	c, err := p.Get(ctx, ev.Key)
	fmt.Println(ev.Type, c.cluster, err)
	// Output:
	// true requeue after 10s
	// Connected default/workload-1 <nil>
}
