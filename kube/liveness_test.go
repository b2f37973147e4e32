package kube

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A connection records when it read bytes; one the server ends is a loss
// (reported once: suspect, and the hook), one we close is not.
func TestLiveConnRecordsReadsAndLosses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lv := newLiveness()
		var lost atomic.Int32
		lv.onLost(func() { lost.Add(1) })
		servers := make(chan net.Conn, 1)
		dial := baseDial(func(context.Context, string, string) (net.Conn, error) {
			c, s := net.Pipe()
			servers <- s
			return c, nil
		}, lv)
		open := func() (net.Conn, net.Conn) {
			c, err := dial(context.Background(), "tcp", "wire.invalid:443")
			if err != nil {
				t.Fatal(err)
			}
			go io.Copy(io.Discard, c) // the transport's read loop
			return c, <-servers
		}
		c1, s1 := open()
		defer c1.Close()
		time.Sleep(3 * time.Second)
		if _, err := s1.Write([]byte("PING ack")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := time.Duration(lv.read.Load()); got != 3*time.Second || lost.Load() != 0 || lv.suspect.Load() {
			t.Fatalf("read at %v, lost %d, suspect %t; want 3s, 0, false", got, lost.Load(), lv.suspect.Load())
		}
		s1.Close() // the server ends it
		synctest.Wait()
		if lost.Load() != 1 || !lv.suspect.Load() {
			t.Fatalf("lost %d, suspect %t after the server closed; want 1, true", lost.Load(), lv.suspect.Load())
		}
		lv.suspect.Store(false)
		c2, s2 := open()
		defer s2.Close()
		c2.Close() // we end it
		synctest.Wait()
		if lost.Load() != 1 || lv.suspect.Load() {
			t.Fatalf("lost %d, suspect %t after our Close; want 1, false", lost.Load(), lv.suspect.Load())
		}
	})
}

// bytesConn reads len(p) bytes at every Read.
type bytesConn struct{ net.Conn }

func (bytesConn) Read(p []byte) (int, error) { return len(p), nil }

func TestLiveConnReadAllocatesNothing(t *testing.T) {
	c := &liveConn{Conn: bytesConn{}, lv: newLiveness()}
	buf := make([]byte, 16)
	if n := testing.AllocsPerRun(100, func() { c.Read(buf) }); n != 0 {
		t.Fatalf("%v allocations per Read", n)
	}
}

// pingIdle configures the cluster's own *http.Transport, adds no layer,
// and leaves anything else alone.
func TestPingIdle(t *testing.T) {
	tr := &http.Transport{}
	wrapped := &classTransport{next: tr} // as client-go's wrappers, forwarding WrappedRoundTripper
	if rt := pingIdle(wrapped); rt != wrapped || tr.HTTP2 == nil ||
		tr.HTTP2.SendPingTimeout != pingEvery || tr.HTTP2.PingTimeout != pingTimeout {
		t.Fatalf("pingIdle(transport) = %T, HTTP2 %+v", rt, tr.HTTP2)
	}
	own := &http.Transport{HTTP2: &http.HTTP2Config{SendPingTimeout: time.Minute}}
	if pingIdle(own); own.HTTP2.SendPingTimeout != time.Minute {
		t.Fatal("pingIdle replaced a transport's own HTTP2 config")
	}
	if pingIdle(http.DefaultTransport); http.DefaultTransport.(*http.Transport).HTTP2 != nil {
		t.Fatal("pingIdle changed http.DefaultTransport")
	}
}

// An idle connection to a real apiserver reads a PING ack pingEvery after
// its last request (client-go alone pings after 30s), through either
// transport of a Dialer's cluster.
func TestIdleConnectionGetsPings(t *testing.T) {
	needEnvtest(t)
	for _, rotate := range []bool{false, true} {
		t.Run(fmt.Sprintf("rotate=%t", rotate), func(t *testing.T) {
			t.Parallel()
			src, rev := rest.CopyConfig(workCfg), ""
			if rotate { // rotatable: no Dial of its own (l.conns closes its connections)
				src.Dial, rev = nil, "1"
			}
			d, err := NewDialer(ConfigFunc(func(context.Context, client.ObjectKey) (*rest.Config, error) { return src, nil }),
				DialerOptions{Requests: RequestOptions{Disable: true}})
			if err != nil {
				t.Fatal(err)
			}
			cfg := rest.CopyConfig(src)
			l, err := d.transportChain(client.ObjectKey{Name: "pinged"}, cfg, src, rev)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(l.conns.CloseAll)
			if (l.rot != nil) != rotate {
				t.Fatalf("rotator %v, want one: %t", l.rot, rotate)
			}
			hc, err := rest.HTTPClientFor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := readyz(context.Background(), hc, cfg.Host); err != nil {
				t.Fatal(err)
			}
			// The last request's frames are in: the next read is a PING's
			// ack, pingEvery after the last frame read, an RTT later, in
			// time for a default Prober (fresh for 5/2 Interval).
			sent, fresh := l.conns.since(), DefaultProbeInterval*5/2
			waitUntil(t, 2*pingEvery, "a read without a request", func() bool {
				return time.Duration(l.conns.read.Load()) >= sent+pingEvery*4/5
			})
			if got := time.Duration(l.conns.read.Load()) - sent; got >= fresh {
				t.Fatalf("first read %v after the request, want one within %v", got, fresh)
			}
		})
	}
}
