package grayproxy

import (
	"errors"
	"net/http"
	"time"
)

// errClosed ends a hold when the proxy closes.
var errClosed = errors.New("grayproxy: closed")

// holdKey keys a Slow request's holdInfo in its context.
type holdKey struct{}

// holdInfo is what a Slow request's hold needs.
type holdInfo struct {
	fault    Fault
	received time.Time     // when the proxy received the request
	switched chan struct{} // closed at the next switch
	c        *modeCounters
}

// until is when the hold of an answer whose headers came from the
// apiserver at headers ends under f: Factor times the apiserver's time to
// headers after the request was received, Latency on top.
func (h *holdInfo) until(f Fault, headers time.Time) time.Time {
	factor := max(f.Factor, 1)
	took := headers.Sub(h.received)
	return h.received.Add(time.Duration(factor*float64(took)) + f.Latency)
}

// hold is the reverse proxies' ModifyResponse: it holds a Slow request's
// answer (headers and body; a watch's first byte) until its time, or until
// the proxy switches to a mode other than Slow (a switch to another Slow
// Fault sets a new time), the caller leaves or the proxy closes.
func (p *Proxy) hold(resp *http.Response) error {
	ctx := resp.Request.Context()
	h, _ := ctx.Value(holdKey{}).(*holdInfo)
	if h == nil {
		return nil
	}
	h.c.slowed.Add(1)
	headers := time.Now()
	f, switched := h.fault, h.switched
	for {
		wait := time.Until(h.until(f, headers))
		if wait <= 0 {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-switched:
			t.Stop()
		}
		p.mu.Lock()
		f, switched = p.fault, p.switched
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return errClosed
		}
		if f.Mode != Slow {
			return nil
		}
	}
}
