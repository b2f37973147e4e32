package main

import (
	"bufio"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// cluster is a fake workload cluster endpoint on 127.0.0.1.
type cluster struct {
	ln     net.Listener
	mode   atomic.Int32 // modeServe or modeHold
	mu     sync.Mutex
	open   []net.Conn
	closed bool
}

const (
	modeServe = iota // answer PING with PONG
	modeHold         // accept, never answer
)

// Addr is the cluster's host:port.
func (c *cluster) Addr() string { return c.ln.Addr().String() }

func listen(mode int32) (*cluster, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &cluster{ln: ln}
	c.mode.Store(mode)
	go c.serve()
	return c, nil
}

func (c *cluster) serve() {
	for {
		conn, err := c.ln.Accept()
		if err != nil {
			return
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			conn.Close()
			return
		}
		c.open = append(c.open, conn)
		c.mu.Unlock()
		go func() {
			r := bufio.NewReader(conn)
			for {
				if _, err := r.ReadString('\n'); err != nil {
					return
				}
				if c.mode.Load() == modeHold {
					continue // swallow the request
				}
				if _, err := conn.Write([]byte("PONG\n")); err != nil {
					return
				}
			}
		}()
	}
}

func (c *cluster) close() {
	c.ln.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, conn := range c.open {
		conn.Close()
	}
}

// startClusters starts healthy-1..3, dead (holds), flapping (holds and
// serves by turns of 3s) and refused (a port nothing listens on).
func startClusters() (map[string]interface{ Addr() string }, func(), error) {
	all := map[string]interface{ Addr() string }{}
	var started []*cluster
	done := make(chan struct{})
	var flapper sync.WaitGroup
	stop := func() {
		close(done)
		flapper.Wait()
		for _, c := range started {
			c.close()
		}
	}
	for name, mode := range map[string]int32{"healthy-1": modeServe, "healthy-2": modeServe,
		"healthy-3": modeServe, "dead": modeHold, "flapping": modeServe} {
		c, err := listen(mode)
		if err != nil {
			stop()
			return nil, nil, err
		}
		started = append(started, c)
		all[name] = c
		if name == "flapping" {
			flapper.Go(func() {
				tick := time.NewTicker(3 * time.Second)
				defer tick.Stop()
				for {
					select {
					case <-tick.C:
						c.mode.Store(1 - c.mode.Load())
					case <-done:
						return
					}
				}
			})
		}
	}
	// A port that was open and is now closed: connections are refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		stop()
		return nil, nil, err
	}
	all["refused"] = addr(ln.Addr().String())
	ln.Close()
	return all, stop, nil
}

type addr string

// Addr returns a.
func (a addr) Addr() string { return string(a) }
