package pool

import (
	"context"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// A dial hung (breaker.Trip: the breaker opens at once, for its longest
// period) only if it ran to its deadline or timed out itself after half of
// DialTimeout. A connection reset or refused, however late, is a cluster
// that answered: a Failure, which counts toward ConsecutiveFailures.
func TestHungOnlyForTimeouts(t *testing.T) {
	const dialTimeout = 10 * time.Second
	opErr := func(errno syscall.Errno) error {
		return fmt.Errorf("kube: readyz: %w", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", errno)})
	}
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		took time.Duration
		hung bool
	}{
		{"reset, late", context.Background(), opErr(syscall.ECONNRESET), 9 * time.Second, false},
		{"refused, late", context.Background(), opErr(syscall.ECONNREFUSED), 9 * time.Second, false},
		{"reset, at once", context.Background(), opErr(syscall.ECONNRESET), time.Millisecond, false},
		{"its own timeout, late", context.Background(), opErr(syscall.ETIMEDOUT), 6 * time.Second, true},
		{"its own timeout, early", context.Background(), opErr(syscall.ETIMEDOUT), 4 * time.Second, false},
		{"deadline exceeded, late", context.Background(), fmt.Errorf("sync: %w", context.DeadlineExceeded), 5 * time.Second, true},
		{"the pool's deadline", expired, opErr(syscall.ECONNRESET), dialTimeout, true},
	} {
		if got := hung(tc.ctx, tc.err, tc.took, dialTimeout); got != tc.hung {
			t.Errorf("%s: hung = %v, want %v", tc.name, got, tc.hung)
		}
	}
}
