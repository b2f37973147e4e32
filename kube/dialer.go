package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/pprof"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/internal/cachedread"
	"github.com/clusterpool/clusterpool/internal/opt"
	"github.com/clusterpool/clusterpool/internal/reqguard"
	"github.com/clusterpool/clusterpool/internal/restmapper"
	"github.com/clusterpool/clusterpool/pool"
)

// Dialer builds Clusters: pass its Dial to pool.New, or use NewPool. Passive
// health (RequestOptions) reports to the pool NewPool built with it; a
// Dialer given to pool.New directly reports to no one.
type Dialer struct {
	src     ConfigSource
	opts    DialerOptions
	pool    poolRef
	metrics *reqguard.Metrics
	// mappers holds the mappings the clusters' default RESTMappers share.
	mappers *restmapper.Table
	// inCluster identifies this controller's Pod (InCluster); nil: never
	// switch to the in-cluster endpoint.
	inCluster *inClusterPod
	// incarnations says which dials read their config fresh
	// (NeedsFreshConfig).
	incarnations incarnations
}

// NewDialer returns a Dialer reading configs from src, or an error matching
// ErrInvalidOptions, naming the field, when src is nil or a field of opts is
// invalid (see DialerOptions).
func NewDialer(src ConfigSource, opts DialerOptions) (*Dialer, error) {
	if src == nil {
		return nil, invalidOptions(errors.New("NewDialer: ConfigSource must not be nil"))
	}
	opt.Default(&opts.Scheme, clientgoscheme.Scheme)
	if err := opts.validate(); err != nil {
		return nil, invalidOptions(err)
	}
	opts.withDefaults()
	metrics, err := reqguard.NewMetrics(opts.Requests.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("kube: request metrics: %w", err)
	}
	d := &Dialer{src: src, opts: opts, metrics: metrics, mappers: restmapper.NewTable()}
	if opts.InCluster {
		d.inCluster = podFromEnv(opts.Logger)
	}
	return d, nil
}

// Dial reads key's config (fresh for the first dials of a Cluster object
// created again under key, see NeedsFreshConfig), checks that the cluster
// answers /readyz (switching to the in-cluster endpoint when InCluster
// finds this controller's Pod in it), and builds an uncached client and, over it, a
// client reading through the cache. The cache's informers run until the
// Cluster is stopped, not until ctx ends. Every goroutine it starts for
// the cluster (its informers, its connections' readers) carries the pprof
// label GoroutineLabel.
func (d *Dialer) Dial(ctx context.Context, key client.ObjectKey) (c *Cluster, err error) {
	pprof.Do(ctx, pprof.Labels(GoroutineLabel, key.String()), func(ctx context.Context) { c, err = d.dial(ctx, key) })
	return c, err
}

// GoroutineLabel is the pprof label, valued with the cluster's key, on the
// goroutines a Dialer starts for a cluster (see Dial).
const GoroutineLabel = "clusterpool.cluster"

// dial is Dial under the label.
func (d *Dialer) dial(ctx context.Context, key client.ObjectKey) (*Cluster, error) {
	start := time.Now()
	log := d.opts.Logger.WithValues("cluster", key.String())
	var uid types.UID // before the config: the object the dial is for
	if d.opts.ObjectUID != nil {
		uid = d.opts.ObjectUID(key)
	}
	trusted, fresh := d.incarnations.begin(key, uid) // see incarnation.go
	srcCfg, rev, err := d.src.Config(freshIf(ctx, fresh), key)
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(srcCfg)
	cfg.Timeout = d.opts.RequestTimeout
	cfg.QPS, cfg.Burst = d.opts.QPS, d.opts.Burst
	d.setUserAgent(cfg)
	l, err := d.transportChain(key, cfg, srcCfg, rev)
	if err != nil {
		return nil, err
	}
	c, err := d.build(ctx, key, cfg, l.conns, l.rot)
	if err != nil {
		l.conns.CloseAll()
		return nil, err
	}
	c.revision, c.guard, c.src, c.rot, c.UID = rev, l.guard, d.src, l.rot, uid
	cctx, stopCache := context.WithCancel(context.Background())
	c.cancel = stopCache
	if g := l.guard; g != nil { // requests in flight end before the informers
		c.cancel = func() { g.Stop(); stopCache() }
	}
	go func() {
		defer close(c.done)
		if err := c.Cache.Start(cctx); err != nil {
			log.Error(err, "cluster cache stopped")
		}
	}()
	if err := d.warm(ctx, cctx, c, start, log); err != nil {
		c.Stop()
		return nil, err
	}
	if l.guard != nil {
		l.guard.Live() // from now on outcomes feed the breaker; the dial's own did
	}
	if fresh {
		d.settle(ctx, key, trusted, uid, rev)
	}
	log.V(1).Info("connected", "revision", rev)
	return c, nil
}

// setUserAgent sets cfg's User-Agent: DialerOptions.UserAgent, else the
// source's, else client-go's default (else Go's "Go-http-client/2.0").
func (d *Dialer) setUserAgent(cfg *rest.Config) {
	if d.opts.UserAgent != "" {
		cfg.UserAgent = d.opts.UserAgent
	} else if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
}

// build reaches the cluster and builds its clients and cache (not started):
// a Cluster without revision, guard, source, rotator and cancel. cfg is the
// dial's own copy; build may change its Host and CA (InCluster), or rot's.
func (d *Dialer) build(ctx context.Context, key client.ObjectKey, cfg *rest.Config, conns connCloser, rot *rotator) (*Cluster, error) {
	hc, err := d.reach(ctx, key, cfg)
	if err != nil {
		return nil, err
	}
	if hc, err = d.inClusterSwitch(ctx, key, cfg, hc, conns, rot); err != nil {
		return nil, err
	}
	mapper, err := d.mapper(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("kube: REST mapper for cluster %s: %w", key, redactURL(err))
	}
	copts := d.opts.Cache
	copts.HTTPClient, copts.Scheme, copts.Mapper = informerClient(hc), d.opts.Scheme, mapper
	ca, err := cache.New(cfg, copts)
	if err != nil {
		return nil, fmt.Errorf("kube: cache for cluster %s: %w", key, redactURL(err))
	}
	// Before the cache starts, as ClusterCache does: each index creates its
	// type's informer, which warm then waits for.
	for _, ix := range d.opts.Indexes {
		if err := ca.IndexField(ctx, ix.Object, ix.Field, ix.Extract); err != nil {
			return nil, fmt.Errorf("kube: index %q of %T for cluster %s: %w", ix.Field, ix.Object, key, redactURL(err))
		}
	}
	uncached, err := client.New(cfg, client.Options{HTTPClient: hc, Scheme: d.opts.Scheme, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("kube: client for cluster %s: %w", key, redactURL(err))
	}
	cached, err := cachedread.New(uncached, ca, d.opts.DisableFor, d.opts.Unstructured)
	if err != nil {
		return nil, fmt.Errorf("kube: client for cluster %s: %w", key, redactURL(err))
	}
	return &Cluster{Key: key, Client: withReadTimeout(cached, key, d.opts.ReadTimeout), Uncached: uncached,
		Cache: ca, config: cfg, httpClient: hc, conns: conns, done: make(chan struct{})}, nil
}

// mapper returns the RESTMapper of the cluster cfg and hc reach (see
// DialerOptions.MapperProvider).
func (d *Dialer) mapper(cfg *rest.Config, hc *http.Client) (meta.RESTMapper, error) {
	if d.opts.MapperProvider != nil {
		return d.opts.MapperProvider(cfg, hc)
	}
	return d.mappers.New(cfg, hc), nil
}

// reach returns cfg's HTTP client once the cluster answers /readyz.
func (d *Dialer) reach(ctx context.Context, key client.ObjectKey, cfg *rest.Config) (*http.Client, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube: HTTP client for cluster %s: %w", key, err)
	}
	// The check has its own bound: no bulkhead slot, no first-byte deadline.
	rctx, cancel := context.WithTimeout(withClass(ctx, reqguard.Unreported), d.opts.ReadyzTimeout)
	defer cancel()
	if _, err := readyz(rctx, hc, cfg.Host); err != nil {
		return nil, fmt.Errorf("kube: cluster %s not reachable: %w", key, err)
	}
	return hc, nil
}

// baseDial returns dial, or client-go's default dialer if it is nil, with
// its connections' reads recorded in wire (see liveness) unless wire is nil.
func baseDial(dial connrotation.DialFunc, wire *liveness) connrotation.DialFunc {
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	if wire == nil {
		return dial
	}
	return wire.dial(dial)
}

// NewPool returns a pool that dials with d and stops each Cluster when it
// leaves the pool (before calling opts.OnClose, if set). A nil d or invalid
// opts give an error matching ErrInvalidOptions (and, for opts,
// pool.ErrInvalidOptions) that names the field.
func NewPool(d *Dialer, opts pool.Options[client.ObjectKey, *Cluster]) (*pool.Pool[client.ObjectKey, *Cluster], error) {
	if d == nil {
		return nil, invalidOptions(errors.New("NewPool: Dialer must not be nil"))
	}
	user := opts.OnClose
	opts.OnClose = func(k client.ObjectKey, c *Cluster) {
		c.Stop()
		if user != nil {
			user(k, c)
		}
	}
	if opts.FormatKey == nil {
		opts.FormatKey = client.ObjectKey.String
	}
	p, err := pool.New(d.Dial, opts)
	if errors.Is(err, pool.ErrInvalidOptions) {
		return nil, invalidOptions(err)
	}
	if err == nil {
		d.pool.set(p) // before any dial: pool.New dials nothing
		registerDialer(p, d)
	}
	return p, err
}
