package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/clusterpool/clusterpool/internal/envtestutil"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
	"github.com/clusterpool/clusterpool/kube"
)

// Namespace of the demo's Cluster objects.
const Namespace = "fleet"

// member is one workload cluster of the fleet as the management cluster
// sees it.
type member struct {
	Key   client.ObjectKey
	Role  string            // healthy, dead or flapping
	Proxy *faultproxy.Proxy // nil when the kubeconfig points at the apiserver
}

// Fleet is a management apiserver with the Cluster CRD, three workload
// apiservers, and fault proxies: "dead" holds every connection, "flapping"
// switches between pass and hold.
type Fleet struct {
	Mgmt    *rest.Config
	Members []member

	envs    []*envtest.Environment
	proxies []*faultproxy.Proxy
}

// crdDir is examples/capi/config/crd, found from this file's location.
func crdDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "config", "crd")
}

// StartFleet starts every apiserver (in parallel) and proxy, and creates
// the Cluster objects and their kubeconfig Secrets.
func StartFleet(ctx context.Context) (*Fleet, error) {
	if _, err := envtestutil.Assets(); err != nil {
		return nil, err
	}
	f := &Fleet{}
	envs := []*envtest.Environment{{CRDDirectoryPaths: []string{crdDir()}, ErrorIfCRDPathMissing: true}, {}, {}, {}}
	cfgs := make([]*rest.Config, len(envs))
	errs := make([]error, len(envs))
	var wg sync.WaitGroup
	for i, env := range envs {
		wg.Go(func() { cfgs[i], errs[i] = env.Start() })
	}
	wg.Wait()
	for i, env := range envs {
		if errs[i] == nil {
			f.envs = append(f.envs, env)
		}
	}
	if err := errors.Join(errs...); err != nil {
		f.Stop()
		return nil, fmt.Errorf("starting apiservers: %w", err)
	}
	f.Mgmt = cfgs[0]
	mgmt, err := client.New(f.Mgmt, client.Options{Scheme: scheme})
	if err != nil {
		f.Stop()
		return nil, err
	}
	if err := mgmt.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil {
		f.Stop()
		return nil, err
	}
	plan := []struct {
		name, role string
		target     *rest.Config
		mode       faultproxy.Mode
	}{
		{"healthy-1", "healthy", cfgs[1], -1},
		{"healthy-2", "healthy", cfgs[2], -1},
		{"healthy-3", "healthy", cfgs[3], -1},
		{"dead", "dead", cfgs[1], faultproxy.Hold},
		{"flapping", "flapping", cfgs[2], faultproxy.Pass},
	}
	for _, m := range plan {
		mem := member{Key: client.ObjectKey{Namespace: Namespace, Name: m.name}, Role: m.role}
		server := ""
		if m.mode >= 0 {
			p, err := faultproxy.New(hostPort(m.target.Host))
			if err != nil {
				f.Stop()
				return nil, err
			}
			p.SetMode(m.mode)
			f.proxies = append(f.proxies, p)
			mem.Proxy, server = p, p.Addr()
		}
		kc, err := envtestutil.Kubeconfig(m.target, server, "")
		if err != nil {
			f.Stop()
			return nil, err
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: kube.KubeconfigSecretName(m.name)},
			Data: map[string][]byte{kube.KubeconfigSecretKey: kc}}
		cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: m.name},
			Spec: clusterv1.ClusterSpec{ControlPlaneEndpoint: endpoint(hostPort(m.target.Host), server)}}
		for _, obj := range []client.Object{secret, cluster} {
			if err := mgmt.Create(ctx, obj); err != nil {
				f.Stop()
				return nil, fmt.Errorf("creating %s: %w", client.ObjectKeyFromObject(obj), err)
			}
		}
		f.Members = append(f.Members, mem)
	}
	return f, nil
}

// Flap switches the flapping member's proxy every period until ctx ends,
// calling healed each time it passes traffic again.
func (f *Fleet) Flap(ctx context.Context, period time.Duration, healed func(client.ObjectKey, time.Time)) {
	for _, m := range f.Members {
		if m.Role != "flapping" {
			continue
		}
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				if m.Proxy.Mode() == faultproxy.Pass {
					m.Proxy.SetMode(faultproxy.Hold)
				} else {
					m.Proxy.SetMode(faultproxy.Pass)
					healed(m.Key, now)
				}
			}
		}
	}
}

// Stop stops every proxy and apiserver the fleet started.
func (f *Fleet) Stop() {
	for _, p := range f.proxies {
		p.Close()
	}
	for _, e := range f.envs {
		e.Stop()
	}
}

// endpoint is the Cluster's control plane endpoint: the proxy if there is
// one, else the apiserver.
func endpoint(apiserver, proxy string) clusterv1.APIEndpoint {
	if proxy != "" {
		apiserver = proxy
	}
	host, port, _ := net.SplitHostPort(apiserver)
	n, _ := strconv.Atoi(port)
	return clusterv1.APIEndpoint{Host: host, Port: int32(n)}
}

func hostPort(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Host
}
