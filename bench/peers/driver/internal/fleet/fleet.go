package fleet

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/clusterpool/clusterpool/internal/envtestutil"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
)

// Namespace holds the Clusters, their Secrets and the reconciled objects.
const Namespace = "fleet"

// ClusterNameLabel is Cluster API's label naming an object's Cluster.
const ClusterNameLabel = "cluster.x-k8s.io/cluster-name"

// Fleet is the management apiserver, the workload apiservers, and one
// fault proxy per Cluster.
type Fleet struct {
	Kubeconfig string   // management kubeconfig file
	Names      []string // Cluster names, index = cluster
	Proxies    []*faultproxy.Proxy

	Dir     string
	Envs    []*envtest.Environment
	Mgmt    client.Client
	objects int
	// Workload are the workload apiservers' admin configs (scale runs
	// scrape their request counters).
	Workload []*rest.Config
}

// Start starts 1+k apiservers in parallel, installs the Cluster CRD,
// and creates m Clusters (each behind its own proxy in front of workload
// apiserver i mod k) with their kubeconfig Secrets and n objects each.
// configure, if given, is applied to workload apiserver i (0 ≤ i < k)
// before it starts (the rotation run's authenticator and audit log).
func Start(ctx context.Context, root string, m, k, n int, configure ...func(int, *envtest.Environment)) (_ *Fleet, err error) {
	if _, err := envtestutil.Assets(); err != nil {
		return nil, err
	}
	crd, err := loadClusterCRD(filepath.Join(root, clusterCRDFile))
	if err != nil {
		return nil, err
	}
	f := &Fleet{}
	defer func() {
		if err != nil {
			f.Stop()
		}
	}()
	if f.Dir, err = os.MkdirTemp("", "bench-peers-"); err != nil {
		return nil, err
	}
	cfgs, err := f.startAPIServers(1+k, configure...)
	if err != nil {
		return nil, err
	}
	if f.Mgmt, err = client.New(cfgs[0], client.Options{}); err != nil {
		return nil, fmt.Errorf("management client: %w", err)
	}
	f.Workload, f.objects = cfgs[1:], n
	if err := InstallCRD(ctx, f.Mgmt, crd); err != nil {
		return nil, err
	}
	if err := f.Mgmt.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil {
		return nil, fmt.Errorf("creating namespace: %w", err)
	}
	kc, err := envtestutil.Kubeconfig(cfgs[0], "", "")
	if err != nil {
		return nil, err
	}
	f.Kubeconfig = filepath.Join(f.Dir, "management.kubeconfig")
	if err := os.WriteFile(f.Kubeconfig, kc, 0o600); err != nil {
		return nil, fmt.Errorf("writing management kubeconfig: %w", err)
	}
	return f, f.grow(ctx, m)
}

// GrowWorkers is how many Clusters grow creates at once.
const GrowWorkers = 8

// grow adds Clusters until the fleet has m (c000, c001, …; cluster i
// behind its own proxy in front of workload apiserver i mod k).
func (f *Fleet) grow(ctx context.Context, m int) error {
	from := len(f.Names)
	if m <= from {
		return nil
	}
	f.Names = append(f.Names, make([]string, m-from)...)
	f.Proxies = append(f.Proxies, make([]*faultproxy.Proxy, m-from)...)
	errs := make([]error, m-from)
	next := make(chan int)
	var wg sync.WaitGroup
	for range GrowWorkers {
		wg.Go(func() {
			for i := range next {
				name := fmt.Sprintf("c%03d", i)
				if err := f.addCluster(ctx, i, name, f.Workload[i%len(f.Workload)]); err != nil {
					errs[i-from] = fmt.Errorf("cluster %s: %w", name, err)
				}
			}
		})
	}
	for i := from; i < m; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

func (f *Fleet) startAPIServers(count int, configure ...func(int, *envtest.Environment)) ([]*rest.Config, error) {
	envs := make([]*envtest.Environment, count)
	cfgs := make([]*rest.Config, count)
	errs := make([]error, count)
	var wg sync.WaitGroup
	for i := range envs {
		wg.Go(func() {
			envs[i], cfgs[i], errs[i] = startEnv(func() *envtest.Environment {
				env := &envtest.Environment{}
				for _, c := range configure {
					if i > 0 { // envs[0] is the management apiserver
						c(i-1, env)
					}
				}
				return env
			})
		})
	}
	wg.Wait()
	for i, env := range envs {
		if errs[i] == nil {
			f.Envs = append(f.Envs, env)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("starting apiservers: %w", err)
	}
	return cfgs, nil
}

// startTries is how many times startEnv starts an apiserver.
const startTries = 3

// startEnv starts an environment made by newEnv, up to startTries times,
// each a new one: on a loaded machine envtest's start can fail after it
// started the processes (its wait for the default namespace is a fixed
// 5 s), and such a start is stopped before the next try, so that no
// apiserver or etcd outlives the run.
func startEnv(newEnv func() *envtest.Environment) (*envtest.Environment, *rest.Config, error) {
	var errs []error
	for range startTries {
		env := newEnv()
		cfg, err := env.Start()
		if err == nil {
			return env, cfg, nil
		}
		errs = append(errs, err)
		if err := env.Stop(); err != nil {
			return nil, nil, errors.Join(append(errs, fmt.Errorf("stopping the failed start: %w", err))...)
		}
	}
	return nil, nil, errors.Join(errs...)
}

// addCluster creates cluster i's proxy (f.Proxies[i]), kubeconfig Secret,
// Cluster (with the status both Cluster API versions wait for) and
// objects, under name (f.Names[i]).
func (f *Fleet) addCluster(ctx context.Context, i int, name string, target *rest.Config) error {
	mgmt := f.Mgmt
	u, err := url.Parse(target.Host)
	if err != nil {
		return fmt.Errorf("workload apiserver address: %w", err)
	}
	p, err := faultproxy.New(u.Host)
	if err != nil {
		return err
	}
	f.Proxies[i], f.Names[i] = p, name
	kc, err := envtestutil.Kubeconfig(target, p.Addr(), "")
	if err != nil {
		return err
	}
	labels := map[string]string{ClusterNameLabel: name}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name + "-kubeconfig", Labels: labels},
		Type: "cluster.x-k8s.io/secret", Data: map[string][]byte{"value": kc}}
	if err := mgmt.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating kubeconfig Secret: %w", err)
	}
	cluster := ClusterObject(name, p.Addr())
	if err := mgmt.Create(ctx, cluster); err != nil {
		return fmt.Errorf("creating Cluster: %w", err)
	}
	cluster.Object["status"] = ClusterStatus()
	if err := mgmt.Status().Update(ctx, cluster); err != nil {
		return fmt.Errorf("setting Cluster status: %w", err)
	}
	for j := range f.objects {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: fmt.Sprintf("%s-%d", name, j), Labels: labels}}
		if err := mgmt.Create(ctx, cm); err != nil {
			return fmt.Errorf("creating object %d: %w", j, err)
		}
	}
	return nil
}

// ClusterObject is a v1beta1 Cluster whose control plane endpoint is the
// proxy.
func ClusterObject(name, endpoint string) *unstructured.Unstructured {
	host, port := splitHostPort(endpoint)
	c := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
		"metadata": map[string]any{"namespace": Namespace, "name": name},
		"spec":     map[string]any{"controlPlaneEndpoint": map[string]any{"host": host, "port": port}},
	}}
	return c
}

// ClusterStatus satisfies both readers: v1beta1's infrastructureReady and
// ControlPlaneInitialized condition (what v1.8.4's health checker waits
// for, cluster_cache_tracker.go line 692) and v1beta2's
// initialization.infrastructureProvisioned (what v1.14.2's connector waits
// for, cluster_cache.go line 485). The condition has the fields of both
// condition types.
func ClusterStatus() map[string]any {
	now := time.Now().UTC().Format(time.RFC3339)
	return map[string]any{
		"infrastructureReady": true,
		"controlPlaneReady":   true,
		"initialization":      map[string]any{"infrastructureProvisioned": true, "controlPlaneInitialized": true},
		"conditions": []any{map[string]any{"type": "ControlPlaneInitialized", "status": "True",
			"lastTransitionTime": now, "reason": "Initialized", "message": ""}},
	}
}

func splitHostPort(hp string) (string, int64) {
	u := url.URL{Host: hp}
	port, _ := strconv.ParseInt(u.Port(), 10, 64)
	return u.Hostname(), port
}

// Stop closes every proxy, stops every apiserver and removes the files.
func (f *Fleet) Stop() {
	for _, p := range f.Proxies {
		if p != nil {
			p.Close()
		}
	}
	for _, e := range f.Envs {
		if err := e.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping apiserver:", err)
		}
	}
	if f.Dir != "" {
		os.RemoveAll(f.Dir)
	}
}
