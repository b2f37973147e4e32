package faultproxy

import (
	"bufio"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// lineConn is a connection through the proxy to the echo server.
type lineConn struct {
	net.Conn
	r *bufio.Reader
}

// dialLine dials p and waits until the proxy accepted the connection.
func dialLine(t *testing.T, p *Proxy) lineConn {
	t.Helper()
	c := dialAccepted(t, p)
	return lineConn{Conn: c, r: bufio.NewReader(c)}
}

// echoLine sends s and reads the echoed line within timeout.
func (c lineConn) echoLine(s string, timeout time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte(s + "\n")); err != nil {
		return "", err
	}
	return c.r.ReadString('\n')
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Blackhole stalls an open connection without closing it, and a switch
// back to Pass delivers what was sent meanwhile: nothing is lost.
func TestBlackholeStallsAndResumes(t *testing.T) {
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dialLine(t, p)
	if l, err := c.echoLine("one", 5*time.Second); err != nil || l != "one\n" {
		t.Fatalf("pass: %q, %v", l, err)
	}
	p.SetMode(Blackhole)
	if _, err := c.echoLine("two", 200*time.Millisecond); !isTimeout(err) {
		t.Fatalf("blackhole: %v, want a timeout", err)
	}
	fresh := dialLine(t, p) // accepted during the partition: not answered either
	if _, err := fresh.echoLine("three", 200*time.Millisecond); !isTimeout(err) {
		t.Fatalf("blackhole, new connection: %v, want a timeout", err)
	}
	p.SetMode(Pass)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if l, err := c.r.ReadString('\n'); err != nil || l != "two\n" {
		t.Fatalf("after the partition: %q, %v, want the stalled line", l, err)
	}
	fresh.SetDeadline(time.Now().Add(5 * time.Second))
	if l, err := fresh.r.ReadString('\n'); err != nil || l != "three\n" {
		t.Fatalf("new connection after the partition: %q, %v", l, err)
	}
}

// Reset resets open connections at the switch and new ones at once.
func TestResetResets(t *testing.T) {
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dialLine(t, p)
	p.SetMode(Reset)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("open connection at the switch: %v, want a reset", err)
	}
	if err := roundTrip(p.Addr(), 5*time.Second); err == nil || isTimeout(err) {
		t.Fatalf("new connection: %v, want it reset", err)
	}
}

// FirstByte holds a connection's first answer until the delay after its
// accept; the next answers are not delayed.
func TestFirstByteDelaysTheFirstAnswer(t *testing.T) {
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const delay = 300 * time.Millisecond
	p.SetDelay(delay)
	p.SetMode(FirstByte)
	start := time.Now()
	c := dialLine(t, p)
	if l, err := c.echoLine("one", 10*time.Second); err != nil || l != "one\n" {
		t.Fatalf("first: %q, %v", l, err)
	}
	if d := time.Since(start); d < delay {
		t.Fatalf("first answer after %v, want ≥ %v", d, delay)
	}
	p.SetDelay(time.Hour) // a second answer waiting for the delay would time out
	if l, err := c.echoLine("two", 10*time.Second); err != nil || l != "two\n" {
		t.Fatalf("second: %q, %v", l, err)
	}
}

// Trickle sends the server's bytes a few at a time, on the connection
// that was open in Pass (kept), and Pass restores full speed.
func TestTrickleSlowsTheServer(t *testing.T) {
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dialLine(t, p)
	const every = 30 * time.Millisecond
	p.SetTrickle(2, every)
	p.SetMode(Trickle)
	start := time.Now()
	if l, err := c.echoLine("abcdefghi", 10*time.Second); err != nil || l != "abcdefghi\n" { // 10 bytes: 5 chunks
		t.Fatalf("trickle: %q, %v", l, err)
	}
	if d := time.Since(start); d < 4*every {
		t.Fatalf("10 bytes at 2 per %v took %v, want ≥ %v", every, d, 4*every)
	}
	p.SetTrickle(1, time.Hour)
	p.SetMode(Pass)
	if l, err := c.echoLine("fast", 5*time.Second); err != nil || l != "fast\n" {
		t.Fatalf("pass after trickle: %q, %v", l, err)
	}
}

// Open counts the client connections open now.
func TestOpenCountsConnections(t *testing.T) {
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dialLine(t, p)
	if n := p.Open(); n != 1 {
		t.Fatalf("Open = %d with one connection, want 1", n)
	}
	c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for p.Open() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("Open = %d 10 s after the client closed, want 0", p.Open())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestModeNames(t *testing.T) {
	for m, want := range map[Mode]string{Pass: "pass", Blackhole: "blackhole", Reset: "reset", FirstByte: "firstbyte", Trickle: "trickle", Mode(99): "unknown", Mode(-1): "unknown"} {
		if got := m.String(); got != want {
			t.Errorf("Mode(%d).String() = %q, want %q", m, got, want)
		}
	}
}
