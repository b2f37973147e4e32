package clustercache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/metric"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/kube"
	poolmetrics "github.com/clusterpool/clusterpool/kube/metrics"
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
	// ProbeFailureThreshold is how many failed health probes in a row
	// disconnect a cluster (and how many failed connects in a row open its
	// breaker): Cluster API's HealthProbe.FailureThreshold, where
	// clusterpool's breaker defaults to breaker.DefaultConsecutiveFailures
	// (3).
	ProbeFailureThreshold = 5
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
// clusters are dialed at once; zero means pool.DefaultMaxTotalDials).
// Kubeconfig Secrets are read under DefaultKubeconfigPolicy. See the
// package documentation for what each option does.
func SetupWithManager(ctx context.Context, mgr manager.Manager, options Options, controllerOptions controller.Options) (ClusterCache, error) {
	return SetupWithManagerAndPolicy(ctx, mgr, options, controllerOptions, DefaultKubeconfigPolicy())
}

// SetupWithManagerAndPolicy is SetupWithManager with the kubeconfig policy
// of the clusters' Secrets: what a kubeconfig may use beyond inline data
// (see DefaultKubeconfigPolicy and kube.KubeconfigPolicy).
func SetupWithManagerAndPolicy(ctx context.Context, mgr manager.Manager, options Options, controllerOptions controller.Options,
	policy kube.KubeconfigPolicy) (ClusterCache, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("controller", ControllerName)
	if err := validateAndDefault(&options); err != nil {
		return nil, err
	}
	tel, err := newTelemetry(ctx)
	if err != nil {
		return nil, err
	}
	cc := &clusterCache{clusters: mgr.GetClient(), traces: tel.traces,
		dialTimeout: pool.DefaultDialTimeout, log: log, stop: make(chan struct{})}
	dopts := dialerOptions(mgr, options, log)
	dopts.Requests.MeterProvider = tel.meter
	dopts.ObjectUID = cc.admittedUID
	// The manager's live reader serves the dials of a Cluster created
	// again under its name until SecretClient's cache catches up (see
	// kube.NeedsFreshConfig).
	src := kube.SecretSource{Reader: options.SecretClient, Live: mgr.GetAPIReader(), Policy: policy}
	d, err := kube.NewDialer(src, dopts)
	if err != nil {
		return nil, fmt.Errorf("clustercache: %w", err)
	}
	cc.pool, err = kube.NewPool(d, cc.poolOptions(controllerOptions.MaxConcurrentReconciles, tel))
	if err != nil {
		tel.traces.stop(log)
		return nil, fmt.Errorf("clustercache: %w", err)
	}
	if err = cc.wire(mgr, options, controllerOptions); err != nil {
		cc.shutdownPool()
		tel.traces.stop(log)
		return nil, fmt.Errorf("clustercache: failed setting up ClusterCache with a controller manager: %w", err)
	}
	return cc, nil
}

// wire builds the admission controller, the Secret watcher and the
// prober around cc's pool, and adds them and cc to mgr.
func (cc *clusterCache) wire(mgr manager.Manager, options Options, controllerOptions controller.Options) error {
	cc.admission = &kube.Admission{Pool: cc.pool,
		Object: &clusterv1.Cluster{}, Connect: true, Name: ControllerName, Admit: admit(options.ClusterFilter)}
	// A failed dial that left the breaker closed is retried after the
	// admission's SetRetry by the reconciler Start runs (ClusterCache
	// retries every ConnectionCreationRetryInterval); an open breaker
	// probes itself.
	cc.admission.SetRetry(cc.retryDelay())
	cc.admitted = cc.admission.Admitted
	cc.metrics.admitted = cc.admission.Admitted
	cc.secrets = &kube.SecretWatcher{Informers: mgr.GetCache(), Pool: cc.pool, Connect: true, Admit: cc.admission.Admitted,
		Logger: cc.log}
	var err error
	// ReadyzInterval = Interval: a GET /readyz at every tick, Cluster API's
	// cadence, so that capi_cluster_cache_healthchecks_total counts as it does.
	cc.prober, err = kube.NewProber(cc.pool, kube.ProberOptions{Interval: ProbeInterval, ReadyzInterval: ProbeInterval,
		Timeout: ProbeTimeout, Logger: cc.log, Probed: cc.probed})
	if err == nil {
		err = mgr.Add(cc)
	}
	if err == nil {
		err = cc.admission.SetupWithManager(mgr, controllerOptions,
			predicates.ResourceHasFilterLabel(mgr.GetScheme(), cc.log, options.WatchFilterValue))
	}
	return err
}

// poolOptions are the options of cc's pool; maxDials is the admission
// controller's MaxConcurrentReconciles.
func (cc *clusterCache) poolOptions(maxDials int, tel telemetry) pool.Options[client.ObjectKey, *kube.Cluster] {
	return pool.Options[client.ObjectKey, *kube.Cluster]{
		MaxTotalDials:  int64(max(maxDials, 0)),
		Breaker:        breakerSettings(0),
		ForKey:         cc.forKey,
		OnClose:        func(_ client.ObjectKey, c *kube.Cluster) { cc.watches.forget(c) },
		TracerProvider: tel.traces.tracerProvider(),
		MeterProvider:  tel.meter,
	}
}

// probed records a health probe of key (the Prober's Probed): its series,
// and a check of the sources' WatchForProbeFailure events.
func (cc *clusterCache) probed(key client.ObjectKey, err error) {
	cc.metrics.probe(key, err == nil)
	cc.probes.probed(key)
}

// breakerSettings are each cluster's breaker settings: Cluster API's probe
// failure threshold, and, if retry is positive, open periods of exactly
// retry (SetConnectionCreationRetryInterval).
func breakerSettings(retry time.Duration) breaker.Settings {
	s := breaker.Settings{ConsecutiveFailures: ProbeFailureThreshold}
	if retry > 0 {
		retry = min(retry, breaker.MaxDuration)
		s.OpenTimeout, s.MaxOpenTimeout = retry, retry
	}
	return s
}

// telemetry is where the pool's spans and metrics go.
type telemetry struct {
	traces *traceExport // nil: the otel global TracerProvider
	meter  metric.MeterProvider
}

// newTelemetry takes Cluster API's series over (see metrics.go), returns
// the MeterProvider of clusterpool's own series on controller-runtime's
// registry (kube/metrics: one per registry, shared by every pool of the
// process, starting no goroutine, so it is never shut down), and the OTLP
// trace export the environment asks for.
func newTelemetry(ctx context.Context) (telemetry, error) {
	if err := takeOverMetrics(); err != nil {
		return telemetry{}, err
	}
	mp, err := poolmetrics.NewMeterProvider(poolmetrics.Options{})
	if err != nil {
		return telemetry{}, fmt.Errorf("clustercache: %w", err)
	}
	traces, err := newTraceExport(ctx)
	if err != nil {
		return telemetry{}, err
	}
	return telemetry{traces: traces, meter: mp}, nil
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
// buildClusterAccessorConfig and its connect do. The request guard's
// passive health is off: requests' outcomes, the informers' relists after
// a dropped connection included, would open the breaker within seconds of
// a network blip, where Cluster API waits for ProbeFailureThreshold
// failed probes before it drops a cluster and its caches.
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
		Requests:           kube.RequestOptions{DisablePassiveHealth: true},
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
