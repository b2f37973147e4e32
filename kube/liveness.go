package kube

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/util/connrotation"
)

// An idle HTTP/2 connection of a cluster gets a PING after pingEvery
// without a frame read (client-go alone: 30s), and is closed when the ack
// is pingTimeout late (client-go's). A ping is a wakeup: not more often
// than a default Prober needs (evidence 5/2 Interval old is stale).
const (
	pingEvery   = 2 * DefaultProbeInterval
	pingTimeout = 15 * time.Second
)

// pingConfig is read by x/net/http2 for each new connection.
func pingConfig() *http.HTTP2Config {
	return &http.HTTP2Config{SendPingTimeout: pingEvery, PingTimeout: pingTimeout}
}

// pingIdle, the innermost WrapTransport of a cluster's config, adds no
// layer: it sets pingConfig on the *http.Transport below client-go's
// wrappers, built for the cluster's own Dial (shared with no one), before
// its first request.
func pingIdle(rt http.RoundTripper) http.RoundTripper {
	next := rt
	for w, ok := next.(utilnet.RoundTripperWrapper); ok; w, ok = next.(utilnet.RoundTripperWrapper) {
		next = w.WrappedRoundTripper()
	}
	if t, ok := next.(*http.Transport); ok && t != http.DefaultTransport && t.HTTP2 == nil {
		t.HTTP2 = pingConfig()
	}
	return rt
}

// liveness is a cluster's evidence that its apiserver process is alive,
// the last time one of its connections read bytes, and the Prober's state
// of it. It is the cluster's connCloser (Cluster.conns).
type liveness struct {
	connCloser
	born    time.Time              // origin of the durations below (monotonic)
	read    atomic.Int64           // since born: the last Read of n > 0 bytes
	readyz  atomic.Int64           // since born: the last GET /readyz's start (the dial's: 0)
	suspect atomic.Bool            // the last probe failed, or a connection was lost since
	retry   atomic.Int64           // since born: no GET /readyz before this after a failed one
	http1   atomic.Bool            // the last GET /readyz answered over HTTP/1: no PINGs
	lost    atomic.Pointer[func()] // see onLost
	// phase, in [0, 1/2), shortens the first readyzEvery after the dial by
	// that fraction of it, so that clusters dialed together (a manager's
	// start, a management apiserver's restart) do not send GET /readyz
	// together ever after: each keeps the phase it drew.
	phase float64
}

func newLiveness() *liveness { return &liveness{born: time.Now(), phase: rand.Float64() / 2} }

// livenessOf returns c's liveness, or nil when a Dialer did not build c.
func livenessOf(c *Cluster) *liveness {
	lv, _ := c.conns.(*liveness)
	return lv
}

func (lv *liveness) since() time.Duration { return time.Since(lv.born) }

// saw records a read: one atomic store, no allocation.
func (lv *liveness) saw() { lv.read.Store(int64(lv.since())) }

// onLost makes f the hook called, once per connection, when a connection
// ends by a Read error no Close of ours caused. f runs on the connection's
// reader, under no lock of ours: it must not block.
func (lv *liveness) onLost(f func()) { lv.lost.Store(&f) }

// dial returns dial with its connections recording their reads in lv.
func (lv *liveness) dial(dial connrotation.DialFunc) connrotation.DialFunc {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := dial(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return &liveConn{Conn: c, lv: lv}, nil
	}
}

// liveConn is a connection that records its reads in lv.
type liveConn struct {
	net.Conn
	lv   *liveness
	over atomic.Bool // closed by us, or its loss reported
}

func (c *liveConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.lv.saw()
	}
	if err != nil && c.over.CompareAndSwap(false, true) {
		c.lv.suspect.Store(true)
		if f := c.lv.lost.Load(); f != nil {
			(*f)()
		}
	}
	return n, err
}

func (c *liveConn) Close() error {
	c.over.Store(true)
	return c.Conn.Close()
}
