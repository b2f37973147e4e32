package faultproxy

import (
	"net"
	"time"
)

// forward writes b to dst as the mode says: stalled while Blackhole,
// after the delay in Delay, the first bytes from the target held in
// FirstByte, the target's bytes trickled in Trickle. It returns false
// once dst fails or the proxy closes.
func (p *Proxy) forward(dst net.Conn, b []byte, accepted time.Time, first bool) bool {
	fromTarget := !accepted.IsZero()
	for {
		switch p.Mode() {
		case Blackhole:
			if !p.waitSwitch(nil) {
				return false
			}
			continue
		case Delay:
			time.Sleep(time.Duration(p.delay.Load()))
		case FirstByte:
			if fromTarget && first {
				if wait := time.Until(accepted.Add(time.Duration(p.delay.Load()))); wait > 0 {
					t := time.NewTimer(wait)
					ok := p.waitSwitch(t.C)
					t.Stop()
					if !ok {
						return false
					}
					continue // the mode may have changed
				}
			}
		case Trickle:
			if fromTarget {
				return p.trickle(dst, b)
			}
		}
		_, err := dst.Write(b)
		return err == nil
	}
}

// trickle writes b to dst a few bytes at a time while the mode is
// Trickle, the rest at once when it changes to anything else but
// Blackhole (forward handles that).
func (p *Proxy) trickle(dst net.Conn, b []byte) bool {
	for len(b) > 0 {
		if p.Mode() != Trickle {
			return p.forward(dst, b, time.Unix(0, 1), false)
		}
		n := min(len(b), int(p.trickleBytes.Load()))
		if _, err := dst.Write(b[:n]); err != nil {
			return false
		}
		b = b[n:]
		if len(b) == 0 {
			break
		}
		t := time.NewTimer(time.Duration(p.trickleEvery.Load()))
		ok := p.waitSwitch(t.C)
		t.Stop()
		if !ok {
			return false
		}
	}
	return true
}
