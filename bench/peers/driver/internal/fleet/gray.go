package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/internal/envtestutil"
	"github.com/clusterpool/clusterpool/internal/grayproxy"
)

// Gray is one internal/grayproxy per Cluster, in front of its workload
// apiserver: the gray run's HTTP-level faults. StartGray points every
// Cluster's kubeconfig Secret at its proxy, so that every Cluster, healthy
// or gray, is reached the same way (TLS ends at the proxy, which
// impersonates the caller's certificate identity). Proxies[i] is cluster
// i's; each starts in Pass.
type Gray struct {
	Proxies []*grayproxy.Proxy
}

// StartGray starts a grayproxy per Cluster of f (NewGrayTrust's CA and
// client CAs) and rewrites every Cluster's kubeconfig Secret to point at
// it. The Cluster objects' controlPlaneEndpoint still names the fault
// proxy: the peers of the gray run read only the Secrets.
func (f *Fleet) StartGray(ctx context.Context) (_ *Gray, err error) {
	trust, err := f.NewGrayTrust()
	if err != nil {
		return nil, err
	}
	g := &Gray{Proxies: make([]*grayproxy.Proxy, len(f.Names))}
	defer func() {
		if err != nil {
			g.Close()
		}
	}()
	for i, name := range f.Names {
		k := i % len(f.Workload)
		p, err := trust.Proxy(f, k)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", name, err)
		}
		g.Proxies[i] = p
		kc, err := envtestutil.Kubeconfig(p.ClientConfig(f.Workload[k]), "", "")
		if err != nil {
			return nil, err
		}
		if err := f.setKubeconfig(ctx, name, kc); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// GrayTrust is what a grayproxy in front of one of a fleet's workload
// apiservers needs: CA signs every proxy's serving certificate (the
// kubeconfigs that go through a proxy trust it, Proxy.ClientConfig), and
// ClientCAs[k] is workload apiserver k's --client-ca-file, so that its
// proxies accept the client certificates the kubeconfigs hold (the admin
// certificate, certificates added per Cluster) and impersonate their
// users; bearer tokens pass through.
type GrayTrust struct {
	CA        *grayproxy.CA
	ClientCAs [][]byte
}

// NewGrayTrust makes a CA and reads every workload apiserver's client CA.
func (f *Fleet) NewGrayTrust() (*GrayTrust, error) {
	ca, err := grayproxy.NewCA()
	if err != nil {
		return nil, err
	}
	t := &GrayTrust{CA: ca, ClientCAs: make([][]byte, len(f.Workload))}
	for k := range t.ClientCAs {
		if t.ClientCAs[k], err = clientCA(f, k); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Proxy starts a grayproxy, passing, in front of f's workload apiserver k
// (whose admin credentials it impersonates certificate callers with).
func (t *GrayTrust) Proxy(f *Fleet, k int) (*grayproxy.Proxy, error) {
	return grayproxy.New(grayproxy.Config{Target: f.Workload[k], ClientCAs: t.ClientCAs[k], CA: t.CA})
}

// clientCA reads workload apiserver k's --client-ca-file.
func clientCA(f *Fleet, k int) ([]byte, error) {
	files := f.Envs[1+k].ControlPlane.GetAPIServer().Configure().Get("client-ca-file").Get(nil)
	if len(files) != 1 {
		return nil, fmt.Errorf("workload apiserver %d: client-ca-file %q", k, files)
	}
	return os.ReadFile(files[0])
}

// setKubeconfig replaces the value of Cluster name's kubeconfig Secret.
func (f *Fleet) setKubeconfig(ctx context.Context, name string, kc []byte) error {
	s := &corev1.Secret{}
	if err := f.Mgmt.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name + "-kubeconfig"}, s); err != nil {
		return fmt.Errorf("reading %s's kubeconfig Secret: %w", name, err)
	}
	s.Data["value"] = kc
	if err := f.Mgmt.Update(ctx, s); err != nil {
		return fmt.Errorf("updating %s's kubeconfig Secret: %w", name, err)
	}
	return nil
}

// Set puts cluster i's proxy in classes[i]'s fault (Pass for a healthy
// one), each fault's sequence seeded from seed and i.
func (g *Gray) Set(classes []GrayClass, faults GrayFaults, seed uint64) error {
	var errs []error
	for i, p := range g.Proxies {
		errs = append(errs, p.Set(faults.Of(classes[i], seed+uint64(i))))
	}
	return errors.Join(errs...)
}

// Pass puts every proxy in Pass.
func (g *Gray) Pass() error {
	var errs []error
	for _, p := range g.Proxies {
		errs = append(errs, p.Set(grayproxy.PassFault()))
	}
	return errors.Join(errs...)
}

// Close closes every proxy.
func (g *Gray) Close() {
	for _, p := range g.Proxies {
		if p != nil {
			p.Close()
		}
	}
}
