package kube

import (
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

// generation is one set of credentials and the connections opened with it.
type generation struct {
	rev        string
	token      string
	cert, key  []byte
	rt         *http.Transport
	conns      *connrotation.Dialer
	active     atomic.Int64 // requests in flight, streams excluded once answered
	retired    atomic.Bool
	closeOnce  sync.Once
	timer      atomic.Pointer[time.Timer]
	onClosed   func(*generation)
	mu         sync.Mutex
	streams    map[*streamBody]time.Time // open watches and streams, by start
	fromConfig *rest.Config              // for RESTConfig: TLS and token of this generation
}

// newGeneration builds a generation; its error quotes no credential.
func (r *rotator) newGeneration(rev, token string, cert, key []byte) (*generation, error) {
	r.mu.Lock()
	tlsc := r.tls
	r.mu.Unlock()
	tlsc.CertData, tlsc.KeyData = cert, key
	tc, err := (&rest.Config{TLSClientConfig: tlsc}).TransportConfig()
	if err != nil {
		return nil, errors.New("kube: the TLS settings are not usable")
	}
	tlsConf, err := transport.TLSConfigFor(tc)
	if err != nil { // tls.X509KeyPair's messages quote no key, but say nothing more
		return nil, errors.New("kube: the client certificate and key, or the CA, are not usable")
	}
	conns := connrotation.NewDialer(baseDial(nil))
	ht := utilnet.SetTransportDefaults(&http.Transport{Proxy: http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second, TLSClientConfig: tlsConf, MaxIdleConnsPerHost: 25,
		DialContext: conns.DialContext, DisableCompression: r.base.DisableCompression})
	own := &rest.Config{TLSClientConfig: tlsc, BearerToken: token, Dial: conns.DialContext}
	return &generation{rev: rev, token: token, cert: cert, key: key, rt: ht, conns: conns,
		onClosed: r.forget, fromConfig: own, streams: map[*streamBody]time.Time{}}, nil
}

// minStreamAge is how old a watch must be before a rotation ends it:
// client-go's reflector takes a watch that ends within a second without an
// event for an error, and lists again.
const minStreamAge = 1500 * time.Millisecond

// release ends a request of g; the last one of a retired g closes it.
func (g *generation) release() {
	if g.active.Add(-1) == 0 && g.retired.Load() {
		g.closeSoon()
	}
}

// retire stops g from taking requests and closes it once its requests in
// flight have ended, or after grace.
func (g *generation) retire(grace time.Duration) {
	g.retired.Store(true)
	if g.active.Load() == 0 || grace <= 0 {
		g.closeSoon()
		return
	}
	g.timer.Store(time.AfterFunc(grace, g.close))
}

// closeSoon closes g once its youngest stream is minStreamAge old.
func (g *generation) closeSoon() {
	g.mu.Lock()
	var youngest time.Time
	for _, start := range g.streams {
		if start.After(youngest) {
			youngest = start
		}
	}
	g.mu.Unlock()
	if wait := minStreamAge - time.Since(youngest); wait > 0 {
		time.AfterFunc(wait, g.close)
		return
	}
	g.close()
}

// close ends g's streams cleanly (their readers see io.EOF, so a watch is
// established again from its resourceVersion, not listed again), then
// closes its connections, idle or not, once.
func (g *generation) close() {
	g.closeOnce.Do(func() {
		if t := g.timer.Load(); t != nil {
			t.Stop()
		}
		g.mu.Lock()
		streams := slices.Collect(maps.Keys(g.streams))
		g.mu.Unlock()
		for _, b := range streams {
			b.end()
		}
		g.rt.CloseIdleConnections()
		g.conns.CloseAll()
		g.onClosed(g)
	})
}

// streamBody is the body of a watch or stream sent on g: when g closes, it
// ends with io.EOF rather than a connection error.
type streamBody struct {
	io.ReadCloser
	g     *generation
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
	return b.ReadCloser.Close()
}

// end makes the stream's reader see io.EOF.
func (b *streamBody) end() {
	b.ended.Store(true)
	b.ReadCloser.Close()
}

// send sends req with g's credentials: its bearer token, unless req carries
// an Authorization header already; its client certificate, through its
// transport.
func (g *generation) send(req *http.Request) (*http.Response, error) {
	if g.token != "" && req.Header.Get("Authorization") == "" {
		req = utilnet.CloneRequest(req)
		req.Header.Set("Authorization", "Bearer "+g.token)
	}
	return g.rt.RoundTrip(req)
}

// finish ties the end of req's flight on g to its response: at once for
// an error or a stream (a watch stays on g's connection until g closes),
// else when the body is read to the end or closed.
func (g *generation) finish(req *http.Request, resp *http.Response, err error) (*http.Response, error) {
	if err != nil {
		g.release()
		return resp, err
	}
	if streaming(req) {
		b := &streamBody{ReadCloser: resp.Body, g: g}
		g.mu.Lock()
		g.streams[b] = time.Now()
		g.mu.Unlock()
		resp.Body = b
		g.release()
		return resp, nil
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: sync.OnceFunc(g.release)}
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
