package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/clusterpool/clusterpool/internal/opt"
	"github.com/clusterpool/clusterpool/internal/reqguard"
	"github.com/clusterpool/clusterpool/pool"
)

// Defaults of DialerOptions.
const (
	DefaultRequestTimeout   = 10 * time.Second
	DefaultQPS              = 20
	DefaultBurst            = 30
	DefaultReadyzTimeout    = 5 * time.Second
	DefaultCacheSyncTimeout = 30 * time.Second
)

// DialerOptions configures a Dialer. Zero fields are the defaults.
type DialerOptions struct {
	// Scheme maps Go types to kinds. nil means client-go's scheme.
	Scheme *runtime.Scheme
	// RequestTimeout is the REST config's per-request timeout, for the
	// requests of the cluster's clients. The cache's lists and watches do
	// not have it (a watch would end after it and be re-established); they
	// end when the cluster is stopped. Zero means 10s.
	RequestTimeout time.Duration
	// QPS and Burst rate-limit each cluster's clients. Zero means 20 and 30.
	QPS   float32
	Burst int
	// ReadyzTimeout bounds the reachability check of a dial. Zero means 5s.
	ReadyzTimeout time.Duration
	// CacheSyncTimeout bounds the initial sync of the informers named in
	// WatchTypes. Zero means 30s; the pool's DialTimeout also bounds it.
	CacheSyncTimeout time.Duration
	// WatchTypes are object types whose informers start, and sync, during
	// the dial, so that the first cached read does not block a worker.
	WatchTypes []client.Object
	// Cache is passed to cache.New (Scheme, Mapper and HTTPClient are set by
	// the dialer).
	Cache cache.Options
	// Logger receives the dialer's messages; never credentials. The zero
	// value discards them.
	Logger logr.Logger
	// Requests configures the protection of requests on established
	// clients (bulkhead, first-byte deadline, passive health, rejection
	// and cancellation once the breaker opens); zero means all on.
	Requests RequestOptions
}

// Dialer builds Clusters: pass its Dial to pool.New, or use NewPool. Passive
// health (RequestOptions) reports to the pool NewPool built with it; a
// Dialer given to pool.New directly reports to no one.
type Dialer struct {
	src     ConfigSource
	opts    DialerOptions
	pool    poolRef
	metrics *reqguard.Metrics
}

// NewDialer returns a Dialer reading configs from src, or an error matching
// ErrInvalidOptions, naming the field, when src is nil or a field of opts is
// negative.
func NewDialer(src ConfigSource, opts DialerOptions) (*Dialer, error) {
	if src == nil {
		return nil, invalidOptions(errors.New("NewDialer: ConfigSource must not be nil"))
	}
	if err := opt.FirstNegative("DialerOptions.", opt.F("RequestTimeout", opts.RequestTimeout),
		opt.F("QPS", opts.QPS), opt.F("Burst", opts.Burst), opt.F("ReadyzTimeout", opts.ReadyzTimeout),
		opt.F("CacheSyncTimeout", opts.CacheSyncTimeout)); err != nil {
		return nil, invalidOptions(err)
	}
	if err := opts.Requests.validate(); err != nil {
		return nil, invalidOptions(err)
	}
	opts.Requests.withDefaults()
	metrics, err := reqguard.NewMetrics(opts.Requests.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("kube: request metrics: %w", err)
	}
	opt.Default(&opts.Scheme, clientgoscheme.Scheme)
	opt.Default(&opts.RequestTimeout, DefaultRequestTimeout)
	opt.Default(&opts.QPS, DefaultQPS)
	opt.Default(&opts.Burst, DefaultBurst)
	opt.Default(&opts.ReadyzTimeout, DefaultReadyzTimeout)
	opt.Default(&opts.CacheSyncTimeout, DefaultCacheSyncTimeout)
	return &Dialer{src: src, opts: opts, metrics: metrics}, nil
}

// Dial reads key's config, checks that the cluster answers /readyz, and
// builds a cached and an uncached client sharing one HTTP client. The
// cache's informers run until the Cluster is stopped, not until ctx ends.
func (d *Dialer) Dial(ctx context.Context, key client.ObjectKey) (*Cluster, error) {
	log := d.opts.Logger.WithValues("cluster", key.String())
	cfg, rev, err := d.src.Config(ctx, key)
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = d.opts.RequestTimeout
	cfg.QPS, cfg.Burst = d.opts.QPS, d.opts.Burst
	var g *reqguard.Guard
	if !d.opts.Requests.Disable {
		g = reqguard.New(d.opts.Requests.guardSettings(key, d.opts.RequestTimeout, &d.pool, d.metrics))
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &guardedTransport{next: rt, g: g} })
	}
	// Every connection of the cluster goes through conns, so that Stop
	// closes them all; client-go's idle-connection closing misses one that
	// a stream still used at that moment and leaves it (and its HTTP/2
	// read loop) to the transport's idle timeout. A Dial of its own also
	// keeps the transport out of client-go's process-wide TLS cache, where
	// clusters with the same credentials would share one.
	conns := connrotation.NewDialer(baseDial(cfg.Dial))
	cfg.Dial = conns.DialContext
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube: HTTP client for cluster %s: %w", key, err)
	}
	// The check has its own bound: no bulkhead slot, no first-byte deadline.
	rctx, cancel := context.WithTimeout(withClass(ctx, reqguard.Unreported), d.opts.ReadyzTimeout)
	err = readyz(rctx, hc, cfg.Host)
	cancel()
	if err != nil {
		conns.CloseAll()
		return nil, fmt.Errorf("kube: cluster %s not reachable: %w", key, err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		conns.CloseAll()
		return nil, fmt.Errorf("kube: REST mapper for cluster %s: %w", key, err)
	}
	copts := d.opts.Cache
	copts.HTTPClient, copts.Scheme, copts.Mapper = informerClient(hc), d.opts.Scheme, mapper
	ca, err := cache.New(cfg, copts)
	if err != nil {
		conns.CloseAll()
		return nil, fmt.Errorf("kube: cache for cluster %s: %w", key, err)
	}
	uncached, err := client.New(cfg, client.Options{HTTPClient: hc, Scheme: d.opts.Scheme, Mapper: mapper})
	if err != nil {
		conns.CloseAll()
		return nil, fmt.Errorf("kube: client for cluster %s: %w", key, err)
	}
	cached, err := client.New(cfg, client.Options{HTTPClient: hc, Scheme: d.opts.Scheme, Mapper: mapper,
		Cache: &client.CacheOptions{Reader: ca}})
	if err != nil {
		conns.CloseAll()
		return nil, fmt.Errorf("kube: client for cluster %s: %w", key, err)
	}
	cctx, stopCache := context.WithCancel(context.Background())
	stop := stopCache
	if g != nil { // requests in flight end before the informers
		stop = func() { g.Stop(); stopCache() }
	}
	c := &Cluster{Key: key, Revision: rev, Client: cached, Uncached: uncached, Cache: ca,
		config: cfg, httpClient: hc, conns: conns, guard: g, cancel: stop, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		if err := ca.Start(cctx); err != nil {
			log.Error(err, "cluster cache stopped")
		}
	}()
	if err := d.warm(ctx, c); err != nil {
		c.Stop()
		return nil, err
	}
	if g != nil {
		g.Live() // from now on outcomes feed the breaker; the dial's own did
	}
	log.V(1).Info("connected", "revision", rev)
	return c, nil
}

// baseDial returns dial, or client-go's default dialer if it is nil.
func baseDial(dial connrotation.DialFunc) connrotation.DialFunc {
	if dial != nil {
		return dial
	}
	return (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
}

// warm starts the informers of WatchTypes and waits for their sync, bounded
// by ctx and CacheSyncTimeout.
func (d *Dialer) warm(ctx context.Context, c *Cluster) error {
	if len(d.opts.WatchTypes) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.CacheSyncTimeout)
	defer cancel()
	for _, obj := range d.opts.WatchTypes {
		if _, err := c.Cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			return fmt.Errorf("kube: informer for %T in cluster %s: %w", obj, c.Key, err)
		}
	}
	if !c.Cache.WaitForCacheSync(ctx) {
		return fmt.Errorf("kube: cache of cluster %s did not sync: %w", c.Key, ctx.Err())
	}
	return nil
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
	}
	return p, err
}
