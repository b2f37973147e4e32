package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Mode is what the proxy does with connections.
type Mode int32

// The modes.
const (
	// Pass forwards traffic both ways.
	Pass Mode = iota
	// Hold accepts connections and reads, but never forwards or answers.
	Hold
	// Refuse closes every connection at once (with a reset where the
	// platform allows).
	Refuse
	// Delay forwards traffic, waiting Delay before forwarding each read.
	Delay
)

// String returns "pass", "hold", "refuse" or "delay".
func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Hold:
		return "hold"
	case Refuse:
		return "refuse"
	case Delay:
		return "delay"
	}
	return "unknown"
}

// Proxy is a switchable TCP proxy. Its methods are safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string
	mode   atomic.Int32
	delay  atomic.Int64

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	closed   bool
	accepted uint64        // client connections accepted so far
	changed  chan struct{} // closed and replaced whenever accepted grows
	wg       sync.WaitGroup
}

// New starts a proxy on 127.0.0.1 (a free port) forwarding to target, which
// must be a loopback host:port.
func New(target string) (*Proxy, error) {
	ap, err := netip.ParseAddrPort(target)
	if err != nil {
		host, _, serr := net.SplitHostPort(target)
		if serr != nil || host != "localhost" {
			return nil, fmt.Errorf("faultproxy: target %q is not a loopback host:port", target)
		}
	} else if !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("faultproxy: target %q is not on loopback", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}, changed: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port on 127.0.0.1.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Mode returns the current mode.
func (p *Proxy) Mode() Mode { return Mode(p.mode.Load()) }

// SetMode switches the mode. Every connection the proxy has accepted is
// closed, so that clients notice at once: a held cluster keeps its old
// connections from working, and a passed one is re-dialed. A connection is
// served in the mode in force when the proxy accepts it: one that a client
// dialed before the switch but that still waited in the kernel's accept
// queue is not closed, it is served in the new mode (as a network that
// fails after the handshake would). Tests that need a connection to count as
// "open at the switch" wait for [Proxy.WaitAccepted] first.
func (p *Proxy) SetMode(m Mode) {
	if Mode(p.mode.Swap(int32(m))) == m {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// Accepted returns how many client connections the proxy has accepted.
func (p *Proxy) Accepted() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// WaitAccepted waits until the proxy has accepted at least n client
// connections in all, or until timeout passes or the proxy is closed
// (false).
func (p *Proxy) WaitAccepted(n uint64, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		got, closed, changed := p.accepted, p.closed, p.changed
		p.mu.Unlock()
		if got >= n {
			return true
		}
		if closed {
			return false
		}
		select {
		case <-changed:
		case <-deadline.C:
			return false
		}
	}
}

// SetDelay sets the delay of Delay mode.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Close stops the proxy, closes every connection and waits for its
// goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if !p.closed {
		close(p.changed) // wakes WaitAccepted
		p.changed = make(chan struct{})
	}
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			continue
		}
		p.mu.Lock()
		p.accepted++
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			p.serve(c)
		}()
	}
}

func (p *Proxy) serve(c net.Conn) {
	switch p.Mode() {
	case Refuse:
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // reset, like a closed port
		}
		return
	case Hold:
		io.Copy(io.Discard, c) // until the client or a mode switch closes it
		return
	}
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	if !p.track(up) {
		return
	}
	defer p.untrack(up)
	done := make(chan struct{}, 2)
	go func() { p.pipe(up, c); done <- struct{}{} }()
	go func() { p.pipe(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
}

// pipe copies src to dst, delaying each chunk while in Delay mode.
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if p.Mode() == Delay {
				time.Sleep(time.Duration(p.delay.Load()))
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return
			}
			if tc, ok := dst.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			return
		}
	}
}
