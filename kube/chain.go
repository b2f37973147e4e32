package kube

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/internal/reqguard"
)

// links are the parts of a cluster's transport chain its Cluster keeps.
type links struct {
	conns *liveness       // closes every connection of the chain, and records their reads
	rot   *rotator        // nil: the credentials do not rotate in place
	guard *reqguard.Guard // nil: RequestOptions.Disable
}

// transportChain sets up cfg (the dial's copy of srcCfg, the ConfigSource's
// config at revision rev) so that the HTTP client rest.HTTPClientFor builds
// from it sends through one chain, top to bottom:
//
//  1. classTransport: the informers' client only (informerClient);
//  2. client-go's wrappers (user agent, bearer token, impersonation);
//  3. guardedTransport: the request guard, unless RequestOptions.Disable;
//  4. watchGzip, unless the config disables compression;
//  5. a rotator, for credentials that rotate in place (a revision, and see
//     rotatable), and below it its current generation's *http.Transport;
//     else client-go's *http.Transport, dialing through a
//     connrotation.Dialer so that Stop closes every connection (client-go's
//     idle-connection closing misses one a stream still uses).
//
// Every connection records its reads in the cluster's liveness (the
// Prober's evidence), and the *http.Transport pings an idle HTTP/2
// connection every pingEvery (newLink; pingIdle, unless the source's
// config has a WrapTransport of its own).
//
// Every layer forwards WrappedRoundTripper, so that client-go's
// CloseIdleConnectionsFor reaches the *http.Transport. A Dial of its own
// also keeps the transport out of client-go's process-wide TLS cache, where
// clusters with the same credentials would share one.
func (d *Dialer) transportChain(key client.ObjectKey, cfg, srcCfg *rest.Config, rev string) (links, error) {
	l := links{conns: newLiveness()}
	if rev != "" && rotatable(srcCfg) {
		rot, err := newRotator(key, d.src, srcCfg, rev, d.opts.RequestTimeout, l.conns)
		if err != nil {
			return links{}, fmt.Errorf("kube: transport for cluster %s: %w", key, err)
		}
		rot.install(cfg)
		l.conns.connCloser, l.rot = rot, rot
	} else {
		if cfg.WrapTransport == nil { // else what is below pingIdle is not client-go's
			cfg.Wrap(pingIdle)
		}
		conns := connrotation.NewDialer(baseDial(cfg.Dial, l.conns))
		cfg.Dial = conns.DialContext
		l.conns.connCloser = conns
	}
	if !cfg.DisableCompression { // wrapped before the guard: below it
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &watchGzip{next: rt} })
	}
	if !d.opts.Requests.Disable {
		l.guard = reqguard.New(d.opts.Requests.guardSettings(key, d.opts.RequestTimeout, &d.pool, d.metrics))
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &guardedTransport{next: rt, g: l.guard} })
	}
	return l, nil
}
