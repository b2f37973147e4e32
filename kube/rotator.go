package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// rotator is the base RoundTripper of a Cluster whose credentials rotate
// in place (see rotatable): the REST config's Transport, at the bottom of
// the cluster's transport chain (see transportChain). Like client-go's exec
// authenticator, it holds the credentials in use in one pointer, cur, that
// a rotation swaps: every request starts on the current generation. A
// generation is one revision's bearer token on a link (a client
// certificate's transport and connections); the package documentation's
// "Rotation" says how a retired one ends, within grace, without failing a
// request. The ConfigSource is never called under mu.
type rotator struct {
	key   client.ObjectKey
	src   ConfigSource
	base  withoutCredentials // the dialed config without its credentials
	grace time.Duration      // RequestTimeout
	wire  *liveness          // records every link's reads; nil: none

	cur    atomic.Pointer[generation]
	flight singleflight.Group // one ConfigSource read at a time for 401s

	mu      sync.Mutex
	tls     rest.TLSClientConfig // TLS of every link, without cert and key
	live    map[*generation]struct{}
	stopped bool
}

// newRotator returns the rotator of a cluster dialed with cfg (the
// ConfigSource's rotatable config, as it returned it; only read) at
// revision rev. A rotatable config has no Dial of its own: every link
// dials with client-go's default dialer, its reads recorded in wire.
func newRotator(key client.ObjectKey, src ConfigSource, cfg *rest.Config, rev string, grace time.Duration, wire *liveness) (*rotator, error) {
	tls := cfg.TLSClientConfig
	tls.CertData, tls.KeyData = nil, nil
	r := &rotator{key: key, src: src, base: sansCredentials(cfg), grace: grace, wire: wire,
		tls: tls, live: map[*generation]struct{}{}}
	g, err := r.next(nil, rev, cfg.BearerToken, cfg.CertData, cfg.KeyData)
	if err != nil {
		return nil, err
	}
	g.link.users++
	r.live[g] = struct{}{}
	r.cur.Store(g)
	return r, nil
}

// next returns a generation of these credentials after old (nil: none),
// on old's link if the TLS settings, client certificate and key included,
// are old's.
func (r *rotator) next(old *generation, rev, token string, cert, key []byte) (*generation, error) {
	r.mu.Lock()
	tlsc := r.tls
	r.mu.Unlock()
	tlsc.CertData, tlsc.KeyData = cert, key
	g := &generation{rev: rev, token: token, onClosed: r.release, streams: map[*streamBody]time.Time{}}
	g.ctx, g.cancel = context.WithCancelCause(context.Background())
	if old != nil && reflect.DeepEqual(old.link.tls, tlsc) {
		g.link = old.link
		return g, nil
	}
	l, err := newLink(tlsc, r.base.DisableCompression, r.wire)
	g.link = l
	return g, err
}

// install makes cfg send through r: no credentials, TLS or Dial of its
// own; r supplies them per generation.
func (r *rotator) install(cfg *rest.Config) {
	cfg.TLSClientConfig, cfg.BearerToken, cfg.Dial, cfg.Transport = rest.TLSClientConfig{}, "", nil, r
}

// revision is the current generation's revision.
func (r *rotator) revision() string { return r.cur.Load().rev }

// apply switches to cfg's credentials at rev (cfg differs from the dialed
// config in credentials only) and retires the previous generation.
func (r *rotator) apply(cfg *rest.Config, rev string) (rotation, error) {
	old := r.cur.Load()
	g, err := r.next(old, rev, cfg.BearerToken, cfg.CertData, cfg.KeyData)
	if err != nil {
		return rotationRefused, fmt.Errorf("%w: cluster %s: %w", ErrCredentialsRefused, r.key, err)
	}
	if !r.swap(old, g) {
		return rotationNone, nil // stopped, or another rotation won: it read the same or a newer Secret
	}
	old.retire(r.grace)
	return rotationInPlace, nil
}

// swap makes g current if old still is and r is not stopped; else it
// closes g's link if g was to be its first user.
func (r *rotator) swap(old, g *generation) bool {
	r.mu.Lock()
	ok := !r.stopped && r.cur.CompareAndSwap(old, g)
	if ok {
		r.live[g] = struct{}{}
		g.link.users++
	}
	unused := g.link.users == 0
	r.mu.Unlock()
	if unused {
		g.link.close()
	}
	return ok
}

// useCA switches every later connection to caFile (the in-cluster switch)
// with the same credentials, and closes the connections opened so far.
func (r *rotator) useCA(caFile string) error {
	r.mu.Lock()
	r.tls.CAData, r.tls.CAFile = nil, caFile
	r.mu.Unlock()
	old := r.cur.Load()
	g, err := r.next(old, old.rev, old.token, old.link.tls.CertData, old.link.tls.KeyData)
	if err != nil {
		return err
	}
	if !r.swap(old, g) {
		return errors.New("kube: cluster stopped during the in-cluster switch")
	}
	old.retire(0)
	return nil
}

// CloseAll closes every connection of every generation and makes later
// rotations no-ops: the cluster is stopping.
func (r *rotator) CloseAll() {
	r.mu.Lock()
	r.stopped = true
	gens := slices.Collect(maps.Keys(r.live))
	r.mu.Unlock()
	for _, g := range gens {
		g.close()
	}
	r.cur.Load().link.close() // the current one may still dial after close
}

// release forgets g, closed, and closes its link if g was its last user.
func (r *rotator) release(g *generation) {
	r.mu.Lock()
	delete(r.live, g)
	g.link.users--
	last := g.link.users == 0
	r.mu.Unlock()
	if last {
		g.link.close()
	}
}

// restConfig returns a standalone copy of cfg (the cluster's config, which
// sends through r) holding the current generation's TLS, token and dialer.
func (r *rotator) restConfig(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	g := r.cur.Load()
	out.Transport, out.TLSClientConfig, out.BearerToken, out.Dial = nil, g.link.tls, g.token, g.link.conns.DialContext
	return out
}

// acquire returns the current generation with one more request in flight
// (a generation is retired only once it is no longer current).
func (r *rotator) acquire() *generation {
	for {
		g := r.cur.Load()
		g.active.Add(1)
		if g == r.cur.Load() {
			return g
		}
		g.release()
	}
}

// RoundTrip sends req with the current credentials. A 401 to a request that
// can be replayed (no body, or GetBody) is retried once, with the newer
// credentials the ConfigSource already holds, if it holds any that differ
// from the request's in credentials only: a 401 that raced the Secret's
// rotation does not fail the request.
func (r *rotator) RoundTrip(req *http.Request) (*http.Response, error) {
	g := r.acquire()
	resp, done, err := g.send(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || !replayable(req) {
		return g.finish(req, resp, done, err)
	}
	next := r.newerThan(req.Context(), g)
	if next == nil {
		return g.finish(req, resp, done, err)
	}
	retry, rerr := rewind(req)
	if rerr != nil {
		return g.finish(req, resp, done, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	done()
	g.release()
	g = r.acquire()
	resp, done, err = g.send(retry)
	return g.finish(retry, resp, done, err)
}

// newerThan returns the current generation if it is newer than g, reading
// the ConfigSource first (one read at a time) if g is still current.
func (r *rotator) newerThan(ctx context.Context, g *generation) *generation {
	if cur := r.cur.Load(); cur != g {
		return cur
	}
	ch := r.flight.DoChan("", func() (any, error) {
		rctx, cancel := context.WithTimeout(context.Background(), r.grace)
		defer cancel()
		return r.refresh(rctx)
	})
	select {
	case <-ch:
	case <-ctx.Done():
		return nil
	}
	if cur := r.cur.Load(); cur != g {
		return cur
	}
	return nil
}

// refresh reads the config again and rotates in place if only the
// credentials changed.
func (r *rotator) refresh(ctx context.Context) (rotation, error) {
	return r.consider(r.src.Config(ctx, r.key))
}

// consider acts on a config read from the source: judgeConfig, then apply an
// in-place rotation (see Cluster.refreshCredentials).
func (r *rotator) consider(cfg *rest.Config, rev string, err error) (rotation, error) {
	out, err := judgeConfig(r.revision(), &r.base, cfg, rev, err)
	if out != rotationInPlace {
		return out, err
	}
	return r.apply(cfg, rev)
}

// replayable reports whether req can be sent again: no body, or GetBody.
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// rewind returns a copy of req with a fresh body.
func rewind(req *http.Request) (*http.Request, error) {
	out := req.Clone(req.Context())
	if req.Body != nil && req.Body != http.NoBody {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		out.Body = body
	}
	return out, nil
}

// WrappedRoundTripper lets CloseIdleConnectionsFor reach the current
// generation's transport.
func (r *rotator) WrappedRoundTripper() http.RoundTripper { return r.cur.Load().link.rt }
