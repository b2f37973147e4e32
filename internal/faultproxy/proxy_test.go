package faultproxy

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echo is a line echo server on 127.0.0.1.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					l, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(l))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(addr string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("hi\n")); err != nil {
		return err
	}
	l, err := bufio.NewReader(c).ReadString('\n')
	if err == nil && l != "hi\n" {
		return net.UnknownNetworkError(l)
	}
	return err
}

func TestModes(t *testing.T) {
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := roundTrip(p.Addr(), 5*time.Second); err != nil {
		t.Fatalf("pass: %v", err)
	}
	p.SetMode(Hold)
	err = roundTrip(p.Addr(), 100*time.Millisecond)
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("hold: %v, want a timeout", err)
	}
	p.SetMode(Refuse)
	if err := roundTrip(p.Addr(), 5*time.Second); err == nil {
		t.Fatal("refuse: round trip succeeded")
	}
	p.SetMode(Delay)
	p.SetDelay(50 * time.Millisecond)
	start := time.Now()
	if err := roundTrip(p.Addr(), 5*time.Second); err != nil {
		t.Fatalf("delay: %v", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond { // one delay each way
		t.Errorf("delay mode took %v", d)
	}
	p.SetMode(Pass)
	if err := roundTrip(p.Addr(), 5*time.Second); err != nil {
		t.Fatalf("pass again: %v", err)
	}
}

func TestSwitchClosesOpenConnections(t *testing.T) {
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dialAccepted(t, p)
	p.SetMode(Hold)
	expectClosed(t, c)
}

// dialAccepted dials p and waits until the proxy has accepted the
// connection: net.Dial returns once the kernel queued it, and only once the
// proxy accepted it is it open at a switch (see SetMode).
func dialAccepted(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	before := p.Accepted()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if !p.WaitAccepted(before+1, 10*time.Second) {
		t.Fatal("the proxy did not accept the connection")
	}
	return c
}

// expectClosed fails unless a read on c ends because the proxy closed it.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("read after switch: %v, want the connection closed", err)
	}
}

// A connection is served in the mode in force when the proxy accepts it:
// accepted in Hold, it is held open (not closed), and the next switch
// closes it.
func TestConnectionAcceptedAfterSwitchGetsNewMode(t *testing.T) {
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.SetMode(Hold)
	c := dialAccepted(t, p)
	c.SetDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := c.Write([]byte("hi\n")); err != nil {
		t.Fatalf("write: %v", err)
	}
	_, err = c.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("read of a held connection: %v, want a timeout (held open)", err)
	}
	p.SetMode(Pass) // closes it
	expectClosed(t, c)
}

func TestWaitAcceptedEndsOnClose(t *testing.T) {
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan bool)
	go func() { done <- p.WaitAccepted(1, time.Hour) }()
	p.Close()
	if <-done {
		t.Fatal("WaitAccepted reported a connection that never came")
	}
}

func TestLoopbackOnly(t *testing.T) {
	for _, target := range []string{"10.0.0.1:443", "192.168.1.1:6443", "example.com:443", "nonsense"} {
		if p, err := New(target); err == nil {
			p.Close()
			t.Errorf("New(%q) accepted a non-loopback target", target)
		}
	}
	p, err := New("localhost:1")
	if err != nil {
		t.Fatalf("localhost: %v", err)
	}
	p.Close()
}
