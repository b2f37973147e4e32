package kube

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/client-go/util/connrotation"
)

// link is one TLS identity's transport: the client certificate and key
// (none for a token), the CA, and the connections opened with them. Token
// changes share it; a certificate or CA change makes a new one.
type link struct {
	tls   rest.TLSClientConfig // with the client certificate and key
	rt    *http.Transport
	conns *connrotation.Dialer
	users int // generations using it, under rotator.mu
}

// newLink builds the transport of tlsc, its connections' reads recorded in
// wire (nil: not recorded); its error quotes no credential.
func newLink(tlsc rest.TLSClientConfig, disableCompression bool, wire *liveness) (*link, error) {
	tc, err := (&rest.Config{TLSClientConfig: tlsc}).TransportConfig()
	if err != nil {
		return nil, errors.New("kube: the TLS settings are not usable")
	}
	tlsConf, err := transport.TLSConfigFor(tc)
	if err != nil { // tls.X509KeyPair's messages quote no key, but say nothing more
		return nil, errors.New("kube: the client certificate and key, or the CA, are not usable")
	}
	conns := connrotation.NewDialer(baseDial(nil, wire))
	rt := utilnet.SetTransportDefaults(&http.Transport{Proxy: http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second, TLSClientConfig: tlsConf, MaxIdleConnsPerHost: 25,
		DialContext: conns.DialContext, DisableCompression: disableCompression, HTTP2: pingConfig()})
	return &link{tls: tlsc, rt: rt, conns: conns}, nil
}

// close closes every connection of l, idle or not.
func (l *link) close() {
	l.rt.CloseIdleConnections()
	l.conns.CloseAll()
}

// phase is a generation's place in its life: current (it takes new
// requests), retired (it takes none; its requests in flight end), closed
// (its streams ended; its link released).
type phase int32

const (
	phaseCurrent phase = iota
	phaseRetired
	phaseClosed
)

// generation is one set of credentials (a revision's token on a link) and
// the requests and streams sent with it.
type generation struct {
	rev      string
	token    string
	link     *link
	onClosed func(*generation) // the rotator's: releases the link
	// ctx ends the requests still in flight when g closes.
	ctx    context.Context
	cancel context.CancelCauseFunc
	active atomic.Int64 // requests in flight, streams excluded once answered
	phase  atomic.Int32 // a phase; changes under mu

	mu      sync.Mutex
	streams map[*streamBody]time.Time // open watches and streams, by start
	timer   *time.Timer               // the pending close; stopped by close
	closeAt time.Time                 // when timer fires
}

// minStreamAge is how old a watch must be before a rotation ends it:
// client-go's reflector takes a watch that ends within a second without an
// event for an error, and lists again.
const minStreamAge = 1500 * time.Millisecond

// release ends a request of g; the last one of a retired g ends it.
func (g *generation) release() {
	if g.active.Add(-1) == 0 && phase(g.phase.Load()) == phaseRetired {
		g.drain(0)
	}
}

// retire stops g from taking requests and closes it once its requests in
// flight have ended (see release), or after grace.
func (g *generation) retire(grace time.Duration) {
	g.mu.Lock()
	if phase(g.phase.Load()) == phaseCurrent {
		g.phase.Store(int32(phaseRetired))
	}
	g.mu.Unlock()
	if g.active.Load() == 0 || grace <= 0 {
		grace = 0
	}
	g.drain(grace)
}

// drain closes a retired g after wait, or once its youngest stream is
// minStreamAge old if that is later, unless it is to close sooner already:
// g has one timer, replaced by an earlier one only.
func (g *generation) drain(wait time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if phase(g.phase.Load()) != phaseRetired {
		return
	}
	for _, start := range g.streams {
		wait = max(wait, minStreamAge-time.Since(start))
	}
	at := time.Now().Add(wait)
	if g.timer != nil && !g.closeAt.After(at) {
		return
	}
	if g.timer != nil {
		g.timer.Stop()
	}
	g.timer, g.closeAt = time.AfterFunc(max(wait, 0), g.close), at
}

// errCredentialsClosed ends a request still in flight on a generation
// that closed: after grace, or when the cluster stopped.
var errCredentialsClosed = errors.New("kube: request outlived its credentials (rotated, or the cluster stopped)")

// close is g's one close path: its streams end cleanly (their readers see
// io.EOF, so a watch is established again from its resourceVersion, not
// listed again), its requests still in flight end, its timer stops, and
// the rotator releases its link.
func (g *generation) close() {
	g.mu.Lock()
	if phase(g.phase.Load()) == phaseClosed {
		g.mu.Unlock()
		return
	}
	g.phase.Store(int32(phaseClosed))
	if g.timer != nil {
		g.timer.Stop()
	}
	streams := slices.Collect(maps.Keys(g.streams))
	g.mu.Unlock()
	for _, b := range streams {
		b.end()
	}
	g.cancel(errCredentialsClosed)
	g.onClosed(g)
}

// streamBody is the body of a watch or stream sent on g: when g closes, it
// ends with io.EOF rather than a connection error.
type streamBody struct {
	io.ReadCloser
	g     *generation
	done  func() // ends the request's context
	ended atomic.Bool
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && b.ended.Load() {
		err = io.EOF
	}
	return n, err
}

func (b *streamBody) Close() error {
	b.g.mu.Lock()
	delete(b.g.streams, b)
	b.g.mu.Unlock()
	defer b.done()
	return b.ReadCloser.Close()
}

// end makes the stream's reader see io.EOF.
func (b *streamBody) end() {
	b.ended.Store(true)
	b.ReadCloser.Close()
}

// send sends req with g's credentials: its bearer token, unless req carries
// an Authorization header already; its client certificate, through its
// link; under a context that g's close ends. done ends that context.
func (g *generation) send(req *http.Request) (resp *http.Response, done func(), err error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	stop := context.AfterFunc(g.ctx, func() { cancel(context.Cause(g.ctx)) })
	done = func() { stop(); cancel(nil) }
	if err := context.Cause(g.ctx); err != nil {
		return nil, done, err
	}
	req = req.WithContext(ctx)
	if g.token != "" && req.Header.Get("Authorization") == "" {
		req = utilnet.CloneRequest(req)
		req.Header.Set("Authorization", "Bearer "+g.token)
	}
	resp, err = g.link.rt.RoundTrip(req)
	return resp, done, err
}

// finish ties the end of req's flight on g to its response: at once for
// an error or a stream (a watch stays open until g closes), else when the
// body is read to the end or closed. done is send's.
func (g *generation) finish(req *http.Request, resp *http.Response, done func(), err error) (*http.Response, error) {
	if err != nil {
		done()
		g.release()
		return resp, err
	}
	if streaming(req) {
		b := &streamBody{ReadCloser: resp.Body, g: g, done: done}
		g.mu.Lock()
		closed := phase(g.phase.Load()) == phaseClosed // answered after grace
		if !closed {
			g.streams[b] = time.Now()
		}
		g.mu.Unlock()
		if closed {
			b.end()
		}
		resp.Body = b
		g.release()
		return resp, nil
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: sync.OnceFunc(func() { done(); g.release() })}
	return resp, nil
}

// releasingBody releases its request's generation at EOF, error or Close.
type releasingBody struct {
	io.ReadCloser
	release func()
}

func (b *releasingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.release()
	}
	return n, err
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}
