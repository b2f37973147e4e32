package clustercache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/clusterpool/clusterpool/kube"
	"github.com/clusterpool/clusterpool/pool"
)

// Cluster API's fixed settings that SetupWithManager keeps.
const (
	// InitialSyncTimeout bounds the initial sync of a cluster's informers
	// (those of Cache.Indexes, e.g. Nodes), as ClusterCache's 5 minutes;
	// the sync may outlast the dial (see kube.DialerOptions).
	InitialSyncTimeout = 5 * time.Minute
	// ProbeInterval and ProbeTimeout are ClusterCache's health probe's.
	ProbeInterval = 10 * time.Second
	ProbeTimeout  = 5 * time.Second
	// ControllerName names the admission controller, as Cluster API's
	// controller is named (its metrics and logs keep their label).
	ControllerName = "clustercache"
)

// ErrInvalidOptions is matched by SetupWithManager's errors about options.
var ErrInvalidOptions = errors.New("clustercache: invalid options")

// SetupWithManager is Cluster API's clustercache.SetupWithManager on a
// clusterpool Pool: same signature, same defaults (Client.Timeout 10s, QPS
// 20, Burst 30), same required fields (SecretClient, Client.UserAgent).
// controllerOptions configure the admission controller ("clustercache"),
// and its MaxConcurrentReconciles is the pool's MaxTotalDials (how many
// clusters are dialed at once; zero means pool.DefaultMaxTotalDials). See
// the package documentation for what each option does.
func SetupWithManager(ctx context.Context, mgr manager.Manager, options Options, controllerOptions controller.Options) (ClusterCache, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("controller", ControllerName)
	if err := validateAndDefault(&options); err != nil {
		return nil, err
	}
	d, err := kube.NewDialer(kube.SecretSource{Reader: options.SecretClient}, dialerOptions(mgr, options, log))
	if err != nil {
		return nil, fmt.Errorf("clustercache: %w", err)
	}
	cc := &clusterCache{clusters: mgr.GetClient(),
		dialTimeout: pool.DefaultDialTimeout, log: log, stop: make(chan struct{})}
	cc.pool, err = kube.NewPool(d, pool.Options[client.ObjectKey, *kube.Cluster]{
		MaxTotalDials: int64(max(controllerOptions.MaxConcurrentReconciles, 0)),
		ForKey:        cc.forKey,
		OnClose:       func(_ client.ObjectKey, c *kube.Cluster) { cc.watches.forget(c) },
	})
	if err != nil {
		return nil, fmt.Errorf("clustercache: %w", err)
	}
	cc.admission = &kube.Admission{Pool: cc.pool, Object: &clusterv1.Cluster{}, Connect: true, Name: ControllerName,
		Admit: admit(options.ClusterFilter)}
	cc.secrets = &kube.SecretWatcher{Informers: mgr.GetCache(), Pool: cc.pool, Connect: true, Admit: cc.admission.Admitted}
	if cc.prober, err = kube.NewProber(cc.pool, kube.ProberOptions{Interval: ProbeInterval, Timeout: ProbeTimeout, Logger: log}); err == nil {
		err = mgr.Add(cc)
	}
	if err == nil {
		err = cc.admission.SetupWithManager(mgr, controllerOptions,
			predicates.ResourceHasFilterLabel(mgr.GetScheme(), log, options.WatchFilterValue))
	}
	if err != nil {
		cc.shutdownPool()
		return nil, fmt.Errorf("clustercache: failed setting up ClusterCache with a controller manager: %w", err)
	}
	return cc, nil
}

// validateAndDefault is Cluster API's validateAndDefaultOptions.
func validateAndDefault(o *Options) error {
	switch {
	case o.SecretClient == nil:
		return fmt.Errorf("%w: options.SecretClient must be set", ErrInvalidOptions)
	case o.Client.UserAgent == "":
		return fmt.Errorf("%w: options.Client.UserAgent must be set", ErrInvalidOptions)
	}
	if o.Client.Timeout == 0 {
		o.Client.Timeout = 10 * time.Second
	}
	if o.Client.QPS == 0 {
		o.Client.QPS = 20
	}
	if o.Client.Burst == 0 {
		o.Client.Burst = 30
	}
	return nil
}

// dialerOptions maps Options onto the dialer's, as Cluster API's
// buildClusterAccessorConfig and its connect do.
func dialerOptions(mgr manager.Manager, o Options, log logr.Logger) kube.DialerOptions {
	indexes := make([]kube.Index, 0, len(o.Cache.Indexes))
	for _, ix := range o.Cache.Indexes {
		indexes = append(indexes, kube.Index{Object: ix.Object, Field: ix.Field, Extract: ix.ExtractValue})
	}
	return kube.DialerOptions{
		Scheme:             mgr.GetScheme(),
		RequestTimeout:     o.Client.Timeout,
		ReadTimeout:        o.Client.Timeout,
		QPS:                o.Client.QPS,
		Burst:              o.Client.Burst,
		UserAgent:          o.Client.UserAgent,
		DisableFor:         o.Client.Cache.DisableFor,
		Unstructured:       true,
		Indexes:            indexes,
		InitialSyncTimeout: InitialSyncTimeout,
		InCluster:          true,
		Logger:             log,
		Cache: cache.Options{
			SyncPeriod:       o.Cache.SyncPeriod,
			ByObject:         o.Cache.ByObject,
			DefaultTransform: o.Cache.DefaultTransform,
		},
	}
}

// admit is the admission's decision on an existing Cluster: its
// infrastructure is provisioned and filter (if any) accepts it.
func admit(filter ClusterFilter) func(client.Object) bool {
	return func(obj client.Object) bool {
		c, ok := obj.(*clusterv1.Cluster)
		if !ok || !ptr.Deref(c.Status.Initialization.InfrastructureProvisioned, false) {
			return false
		}
		return filter == nil || filter(c)
	}
}
