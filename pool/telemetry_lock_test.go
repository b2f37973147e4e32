package pool

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/clusterpool/clusterpool/tracing"
)

// blockingProcessor is a SpanProcessor whose OnStart blocks for the first
// dial span until release is closed: user code of the TracerProvider that
// hangs.
type blockingProcessor struct {
	first   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (b *blockingProcessor) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	if s.Name() != tracing.DialSpan {
		return
	}
	if b.first.CompareAndSwap(false, true) {
		close(b.entered)
		<-b.release
	}
}

func (*blockingProcessor) OnEnd(sdktrace.ReadOnlySpan)      {}
func (*blockingProcessor) Shutdown(context.Context) error   { return nil }
func (*blockingProcessor) ForceFlush(context.Context) error { return nil }

// A span processor that hangs in OnStart of cluster a's dial span holds no
// pool lock: another cluster's Get gets its client, a's other callers are
// sent away within their bound, and State and Keys answer. Real time (a
// goroutine blocked on a mutex is not durably blocked for synctest), with
// a generous bound.
func TestBlockingSpanProcessorHoldsNoLock(t *testing.T) {
	bp := &blockingProcessor{entered: make(chan struct{}), release: make(chan struct{})}
	f := newFake()
	f.reply = func(string) *dialReply { return nil } // every dial succeeds at once
	p := newPool(t, f, Options[string, *client]{MaxWait: 10 * time.Second,
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(bp))})
	first := getAsync(context.Background(), p, "a")
	<-bp.entered // a's dial span is starting, and hangs
	done := make(chan error, 1)
	go func() {
		if _, err := p.Get(context.Background(), "b"); err != nil {
			done <- err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := p.Get(ctx, "a"); !errors.Is(err, ErrWaitTimeout) {
			done <- err
			return
		}
		p.State("a")
		p.Keys()
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("while a's span processor hangs: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("a hanging span processor blocked the pool")
	}
	close(bp.release)
	if r := <-first; r.err != nil {
		t.Errorf("a's first Get: %v", r.err)
	}
}
