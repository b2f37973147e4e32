package reqguard_test

// Regression tests of issue 23 for the request guard. Black-box: only the
// exported API, on virtual time.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/clusterpool/clusterpool/internal/reqguard"
	"github.com/clusterpool/clusterpool/pool"
)

// send plays one request through g as kube's transport does: a cluster
// that answers after latency, or never (latency < 0): then the request
// ends when the guard cancels it.
func send(g *reqguard.Guard, latency time.Duration) error {
	ctx, f, err := g.Begin(context.Background(), reqguard.Counted)
	if err != nil {
		return err
	}
	if latency >= 0 {
		time.Sleep(latency)
		f.FirstByte()
		f.End(nil)
		return nil
	}
	<-ctx.Done()
	err = f.Err(ctx.Err())
	f.End(err)
	return err
}

// Item 1: a cluster that answered in well under a millisecond stops
// answering; two hung requests fill MaxInFlight 2. A caller that comes
// back after RetryAfter (as kube.Requeue makes a controller do) must find
// a slot free, not be rejected over and over: the slots free only at the
// first-byte deadline of the requests holding them, and RetryAfter must
// say so (it used to be the cluster's latency, 1 ms).
func TestPromiseBulkheadRetryAfterIsWhenASlotFrees(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := reqguard.New(reqguard.Settings{Cluster: "c", MaxInFlight: 2,
			MinFirstByte: 1500 * time.Millisecond, MaxFirstByte: 10 * time.Second, Report: func(error) {}})
		g.Live()
		defer g.Stop() // if the test fails: the hung requests end
		for range 50 {
			if err := send(g, 200*time.Microsecond); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		hung := make(chan error, 2)
		hungAt := time.Now()
		for range 2 {
			wg.Go(func() { hung <- send(g, -1) })
		}
		time.Sleep(500 * time.Millisecond) // both are late by now
		deadline := hungAt.Add(g.FirstByteDeadline())
		rejections := 0
		for {
			err := send(g, 200*time.Microsecond)
			if err == nil {
				break
			}
			if !errors.Is(err, reqguard.ErrBulkheadFull) {
				t.Fatalf("request: %v", err)
			}
			rejections++
			d, ok := pool.RetryAfter(err)
			if !ok {
				t.Fatalf("ErrBulkheadFull without RetryAfter: %v", err)
			}
			if rejections == 1 && time.Now().Add(d).Before(deadline) {
				t.Errorf("RetryAfter %v: before the slots can free (the hung requests' deadline is %v away)",
					d, time.Until(deadline))
			}
			if rejections > 3 {
				t.Fatalf("rejected %d times in %v by following RetryAfter (last %v): a busy loop",
					rejections, time.Since(hungAt), d)
			}
			time.Sleep(d)
			synctest.Wait() // the guard's cancellations have ended the hung requests
		}
		wg.Wait()
		for range 2 {
			if err := <-hung; !errors.Is(err, reqguard.ErrFirstByteTimeout) {
				t.Errorf("hung request: %v, want ErrFirstByteTimeout", err)
			}
		}
	})
}

// Passive health must not count a timeout as a success. Go's HTTP client
// applies its Timeout as a deadline on the request's context and, on a
// chunked response, can then end the body with a clean EOF: the transport
// ends the flight with the answer's verdict, a success. The guard sees the
// caller's deadline has passed and reports that failure instead.
func TestPromisePassiveHealthCountsTimeoutMidBodyAsFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got []error
		g := reqguard.New(reqguard.Settings{Cluster: "c", MaxInFlight: 2, MinFirstByte: time.Second,
			MaxFirstByte: 10 * time.Second, Report: func(err error) { mu.Lock(); got = append(got, err); mu.Unlock() }})
		g.Live()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // the client's Timeout
		defer cancel()
		_, f, err := g.Begin(ctx, reqguard.Counted)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
		f.FirstByte()                // headers came
		time.Sleep(10 * time.Second) // the body stalls until the Timeout
		f.End(nil)                   // ...and the client reported a clean end of body

		_, f, _ = g.Begin(context.Background(), reqguard.Counted) // no deadline: a success stays one
		f.FirstByte()
		f.End(nil)
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 2 || !errors.Is(got[0], context.DeadlineExceeded) || got[1] != nil {
			t.Fatalf("reported %v, want [the deadline's failure, a success]", got)
		}
	})
}
