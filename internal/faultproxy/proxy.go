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
	// Blackhole stalls traffic both ways, as a partitioned network does:
	// open connections stay open and forward nothing, new ones are
	// accepted and not answered; once the mode changes to Pass or Trickle
	// they go on where they stopped (nothing is lost).
	Blackhole
	// Reset resets every open connection at the switch and every new one
	// at once (TCP RST).
	Reset
	// FirstByte forwards traffic, but a connection's first bytes from the
	// target reach the client only Delay (SetDelay) after the proxy
	// accepted it: a slow TLS handshake, or a server slow to answer.
	FirstByte
	// Trickle forwards the client's traffic at once and the target's a
	// few bytes at a time (SetTrickle).
	Trickle
)

// modeNames are the modes' String values.
var modeNames = [...]string{Pass: "pass", Hold: "hold", Refuse: "refuse", Delay: "delay",
	Blackhole: "blackhole", Reset: "reset", FirstByte: "firstbyte", Trickle: "trickle"}

// String returns the mode's name ("pass", "hold", "blackhole", …).
func (m Mode) String() string {
	if m < 0 || int(m) >= len(modeNames) {
		return "unknown"
	}
	return modeNames[m]
}

// keepsConns reports whether connections survive a switch between two
// modes that both keep them: a network that stalls or slows down keeps
// its TCP streams.
func keepsConns(m Mode) bool { return m == Pass || m == Blackhole || m == Trickle }

// Default trickle: 64 bytes every 100 ms (640 B/s).
const (
	DefaultTrickleBytes = 64
	DefaultTrickleEvery = 100 * time.Millisecond
)

// Proxy is a switchable TCP proxy. Its methods are safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string
	mode   atomic.Int32
	delay  atomic.Int64
	// trickleBytes and trickleEvery are Trickle's rate.
	trickleBytes atomic.Int64
	trickleEvery atomic.Int64

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	closed   bool
	accepted uint64        // client connections accepted so far
	changed  chan struct{} // closed and replaced whenever accepted grows
	switched chan struct{} // closed and replaced at every switch and at Close
	open     int           // client connections open
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
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}, changed: make(chan struct{}), switched: make(chan struct{})}
	p.trickleBytes.Store(DefaultTrickleBytes)
	p.trickleEvery.Store(int64(DefaultTrickleEvery))
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
// connections from working, and a passed one is re-dialed. Two
// exceptions: a switch between Pass, Blackhole and Trickle keeps the
// connections (a stalled or slow network keeps its streams), and a switch
// to Reset resets them. A connection is
// served in the mode in force when the proxy accepts it: one that a client
// dialed before the switch but that still waited in the kernel's accept
// queue is not closed, it is served in the new mode (as a network that
// fails after the handshake would). Tests that need a connection to count as
// "open at the switch" wait for [Proxy.WaitAccepted] first.
func (p *Proxy) SetMode(m Mode) {
	old := Mode(p.mode.Swap(int32(m)))
	if old == m {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.switched) // wakes stalled and waiting connections
	p.switched = make(chan struct{})
	if keepsConns(old) && keepsConns(m) {
		return
	}
	if m == Reset {
		// Every connection first, then the closes: closing one end of a
		// proxied pair makes its serve goroutine close the other, which
		// must reset too (a FIN there would read as a clean EOF).
		for c := range p.conns {
			resetOnClose(c)
		}
	}
	for c := range p.conns {
		c.Close()
	}
}

// resetOnClose makes c's Close send a TCP reset.
func resetOnClose(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
}

// Open returns how many client connections are open now.
func (p *Proxy) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open
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

// SetDelay sets the delay of Delay and FirstByte modes.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// SetTrickle sets Trickle's rate: n bytes every interval (defaults
// DefaultTrickleBytes, DefaultTrickleEvery); values below 1 keep the
// current ones.
func (p *Proxy) SetTrickle(n int, every time.Duration) {
	if n >= 1 {
		p.trickleBytes.Store(int64(n))
	}
	if every > 0 {
		p.trickleEvery.Store(int64(every))
	}
}

// waitSwitch waits for the next switch or Close; false if the proxy is
// closed.
func (p *Proxy) waitSwitch(timer <-chan time.Time) bool {
	p.mu.Lock()
	closed, switched := p.closed, p.switched
	p.mu.Unlock()
	if closed {
		return false
	}
	select {
	case <-switched:
	case <-timer:
	}
	return true
}

// Close stops the proxy, closes every connection and waits for its
// goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if !p.closed {
		close(p.changed) // wakes WaitAccepted
		p.changed = make(chan struct{})
		close(p.switched) // wakes stalled connections
		p.switched = make(chan struct{})
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
		p.open++
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.closed1(c)
			p.serve(c, time.Now())
		}()
	}
}

// closed1 untracks client connection c and counts it closed.
func (p *Proxy) closed1(c net.Conn) {
	p.untrack(c)
	p.mu.Lock()
	p.open--
	p.mu.Unlock()
}

func (p *Proxy) serve(c net.Conn, accepted time.Time) {
	for p.Mode() == Blackhole { // not answered until the partition heals
		if !p.waitSwitch(nil) {
			return
		}
	}
	switch p.Mode() {
	case Refuse, Reset:
		resetOnClose(c) // like a closed port
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
	go func() { p.pipe(up, c, time.Time{}); done <- struct{}{} }()
	go func() { p.pipe(c, up, accepted); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
}

// pipe copies src to dst in the modes' ways. accepted is when the
// proxy accepted the client's connection if src is the target (zero if
// src is the client): FirstByte holds the first bytes until then plus the
// delay.
func (p *Proxy) pipe(dst, src net.Conn, accepted time.Time) {
	buf := make([]byte, 32<<10)
	first := true
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.forward(dst, buf[:n], accepted, first) {
				return
			}
			first = false
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
