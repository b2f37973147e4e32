package kube

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"weak"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/internal/reqguard"
	"github.com/clusterpool/clusterpool/pool"
)

// kubePool is the pool type NewPool returns.
type kubePool = pool.Pool[client.ObjectKey, *Cluster]

// dialers holds the Dialer of each pool NewPool built, for its Prober's
// endpoint checks (see Prober). Both are held weakly: the pool holds its
// Dialer (its DialFunc), and an entry is deleted once its pool is
// collected.
var dialers sync.Map // weak.Pointer[kubePool] → weak.Pointer[Dialer]

// registerDialer records d as p's Dialer.
func registerDialer(p *kubePool, d *Dialer) {
	k := weak.Make(p)
	dialers.Store(k, weak.Make(d))
	runtime.AddCleanup(p, func(k weak.Pointer[kubePool]) { dialers.Delete(k) }, k)
}

// dialerOf returns the Dialer of p, or nil for a pool NewPool did not
// build (a fake, or pool.New with a Dialer's Dial).
func dialerOf(p ClusterPool) *Dialer {
	pp, ok := p.(*kubePool)
	if !ok || pp == nil {
		return nil
	}
	v, ok := dialers.Load(weak.Make(pp))
	if !ok {
		return nil
	}
	return v.(weak.Pointer[Dialer]).Value()
}

// endpointCheckKey marks the context of the ConfigSource read an
// endpoint check makes (IsEndpointCheck).
type endpointCheckKey struct{}

// IsEndpointCheck reports whether ctx is that of a ConfigSource read for
// the Prober's endpoint check of a cluster whose breaker is open
// (docs/health.md, "Revive an open breaker") rather than for a dial: a
// ConfigSource that counts or meters dials can tell the two apart.
func IsEndpointCheck(ctx context.Context) bool {
	v, _ := ctx.Value(endpointCheckKey{}).(bool)
	return v
}

// check is a dial's first step alone: key's config read from the
// ConfigSource, as a dial reads it (under the same KubeconfigPolicy), and
// GET /readyz over a connection of its own (TCP, TLS, the credentials;
// the config's own Dial, if any, under it), closed when it returns. It
// builds no client, cache or guard and shares no connection with anyone;
// ctx bounds it. nil means /readyz answered 200: a dial would get past
// its own /readyz now.
func (d *Dialer) check(ctx context.Context, key client.ObjectKey) error {
	srcCfg, _, err := d.src.Config(context.WithValue(ctx, endpointCheckKey{}, true), key)
	if err != nil {
		return err
	}
	cfg := rest.CopyConfig(srcCfg)
	d.setUserAgent(cfg)
	conns := connrotation.NewDialer(baseDial(cfg.Dial, nil))
	defer conns.CloseAll()
	cfg.Dial = conns.DialContext // also keeps it out of client-go's TLS cache
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("kube: HTTP client for cluster %s: %w", key, err)
	}
	_, err = readyz(withClass(ctx, reqguard.Unreported), hc, cfg.Host)
	return err
}
