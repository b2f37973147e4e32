package grayproxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Config configures a Proxy.
type Config struct {
	// Target is the apiserver behind the proxy: its Host (https, on a
	// loopback address), the trust of its serving certificate (CAData or
	// CAFile) and, with ClientCAs, the proxy's own credentials (a client
	// certificate or BearerToken), which it uses only to impersonate the
	// callers who authenticate with a client certificate: they need the
	// impersonate verb on users and groups (system:masters has it). Its
	// Dial, if set, dials the apiserver. Required.
	Target *rest.Config
	// ClientCAs is the PEM of the CAs whose client certificates the proxy
	// accepts: the apiserver's --client-ca-file. Empty (the default): the
	// proxy asks for no client certificate, and callers authenticate with
	// bearer tokens, which it passes through.
	ClientCAs []byte
	// CA signs the proxy's serving certificate. Nil (the default): the
	// proxy makes a CA of its own.
	CA *CA
}

// Proxy is a TLS-terminating reverse proxy on 127.0.0.1 in front of one
// apiserver, switchable at run time between Pass, Slow, Errors and
// Throttled. Its methods are safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	srv    *http.Server
	ca     *CA
	up     *upstream
	ctx    context.Context // every request's; canceled by Close
	cancel context.CancelFunc
	served chan struct{} // closed when srv.Serve returned
	counts counters

	mu       sync.Mutex
	fault    Fault
	spread   *spreader     // Errors' and Throttled's sequence; nil in other modes
	switched chan struct{} // closed and replaced at every Set and at Close
	closed   bool
	handlers sync.WaitGroup
}

// New starts a proxy on 127.0.0.1 (a free port) in front of cfg.Target,
// in Pass mode.
func New(cfg Config) (*Proxy, error) {
	up, err := newUpstream(cfg)
	if err != nil {
		return nil, err
	}
	ca := cfg.CA
	if ca == nil {
		if ca, err = NewCA(); err != nil {
			return nil, err
		}
	}
	cert, err := ca.serving()
	if err != nil {
		return nil, err
	}
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"}}
	if up.clientCAs != nil {
		tlsCfg.ClientAuth = tls.RequestClientCert // verified per request, as the apiserver does
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("grayproxy: %w", err)
	}
	p := &Proxy{ln: ln, ca: ca, up: up, served: make(chan struct{}), switched: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.srv = &http.Server{Handler: p, TLSConfig: tlsCfg, ReadHeaderTimeout: time.Minute,
		BaseContext: func(net.Listener) context.Context { return p.ctx },
		ErrorLog:    log.New(io.Discard, "", 0)} // handshakes of clients that leave
	for _, rp := range []*httputil.ReverseProxy{up.bare, up.ident} {
		if rp != nil {
			rp.ModifyResponse = p.hold
			rp.ErrorLog = p.srv.ErrorLog
		}
	}
	go func() {
		defer close(p.served)
		p.srv.ServeTLS(ln, "", "")
	}()
	return p, nil
}

// Addr is the proxy's host:port on 127.0.0.1.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is the proxy's address as a kubeconfig's server: https://Addr.
func (p *Proxy) URL() string { return "https://" + p.Addr() }

// CAPEM is the PEM of the CA that signed the proxy's serving certificate:
// a kubeconfig's certificate-authority-data.
func (p *Proxy) CAPEM() []byte { return p.ca.PEM() }

// ClientConfig returns a copy of user (a config for the apiserver behind
// the proxy) that goes through the proxy: its Host is URL, it trusts
// CAPEM, and it keeps user's credentials. envtestutil.Kubeconfig writes
// it as a kubeconfig.
func (p *Proxy) ClientConfig(user *rest.Config) *rest.Config {
	c := rest.CopyConfig(user)
	c.Host = p.URL()
	// A new TLSClientConfig: only the user's certificate is kept, so the
	// copy verifies the proxy against CAPEM whatever user skipped or named.
	t := user.TLSClientConfig
	c.TLSClientConfig = rest.TLSClientConfig{CAData: p.CAPEM(), CertFile: t.CertFile, KeyFile: t.KeyFile,
		CertData: t.CertData, KeyData: t.KeyData, NextProtos: t.NextProtos}
	c.Dial = nil
	return c
}

// Set switches the proxy to f. Requests are faulted by the Fault in force
// when the proxy receives them, except that a Slow hold ends at a switch
// to any other mode; Errors and Throttled start a new sequence (from
// f.Seed) at each Set. It returns an error wrapping ErrInvalidFault, and
// keeps the current Fault, if f has an invalid field.
func (p *Proxy) Set(f Fault) error {
	if err := f.validate(); err != nil {
		return err
	}
	var s *spreader
	if f.Mode == Errors || f.Mode == Throttled {
		s = newSpreader(f.rate(), f.Seed)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault, p.spread = f, s
	close(p.switched)
	p.switched = make(chan struct{})
	return nil
}

// Fault returns the Fault in force.
func (p *Proxy) Fault() Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fault
}

// current returns the Fault in force, its sequence and the channel closed
// at the next switch, and counts a handler in (false once closed).
func (p *Proxy) current() (Fault, *spreader, chan struct{}, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return Fault{}, nil, nil, false
	}
	p.handlers.Add(1)
	return p.fault, p.spread, p.switched, true
}

// Close stops the proxy: it stops listening, ends the requests in flight
// (their callers see their connections close) and waits for them, and
// closes its connections to the apiserver.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.switched) // ends holds
	p.switched = make(chan struct{})
	p.mu.Unlock()
	p.cancel()
	err := p.srv.Close()
	<-p.served
	p.handlers.Wait()
	p.up.closeIdle()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// ServeHTTP serves one request by the Fault in force.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f, s, switched, ok := p.current()
	if !ok {
		http.Error(w, "grayproxy: closed", http.StatusServiceUnavailable)
		return
	}
	defer p.handlers.Done()
	c := p.counts.of(f.Mode)
	if s != nil {
		if fault, coin := s.next(); fault {
			c.faulted.Add(1)
			if f.Mode == Throttled {
				writeThrottled(w, f.retryAfterSeconds())
			} else {
				writeError(w, f.Code, coin)
			}
			return
		}
	}
	rp, err := p.up.route(r)
	if err != nil {
		c.refused.Add(1)
		writeRefused(w, err)
		return
	}
	c.passed.Add(1)
	if f.Mode == Slow {
		r = r.WithContext(context.WithValue(r.Context(), holdKey{}, &holdInfo{fault: f, received: time.Now(), switched: switched, c: c}))
	}
	rp.ServeHTTP(w, r)
}
