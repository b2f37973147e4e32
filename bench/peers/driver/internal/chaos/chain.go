package chaos

import (
	"k8s.io/client-go/rest"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/internal/envtestutil"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
	"github.com/clusterpool/clusterpool/internal/grayproxy"
)

// The proxy chain is how one plane reaches one Cluster's workload
// apiserver:
//
//	manager → fault proxy (TCP) → gray proxy (TLS ends, HTTP) → workload apiserver
//
// The fault proxy stands first, where the manager's connection is, so
// that a TCP fault (reset, black hole, first-byte delay, trickle) hits
// that connection as it did before the gray proxy was there: the manager
// sees a reset or a stall, never an HTTP answer the gray proxy would make
// of it (a 502), and the fault proxy's open connections are still the
// manager's (the stuck verdict counts them). The gray proxy passes
// everything while no gray fault is on; its certificate is for 127.0.0.1,
// so the kubeconfig names the fault proxy's address and trusts the gray
// proxy's CA (chainKubeconfig).

// newChain starts a chain to workload apiserver k of f: a gray proxy
// (trust's) and a fault proxy in front of it, both passing.
func newChain(f *fleet.Fleet, trust *fleet.GrayTrust, k int) (*faultproxy.Proxy, *grayproxy.Proxy, error) {
	g, err := trust.Proxy(f, k)
	if err != nil {
		return nil, nil, err
	}
	fp, err := faultproxy.New(g.Addr())
	if err != nil {
		g.Close()
		return nil, nil, err
	}
	return fp, g, nil
}

// chainKubeconfig is the kubeconfig of user (a config of the workload
// apiserver the chain leads to: its client certificate, or token if not
// empty) through the chain of fp in front of g: the fault proxy's
// address, the gray proxy's CA.
func chainKubeconfig(fp *faultproxy.Proxy, g *grayproxy.Proxy, user *rest.Config, token string) ([]byte, error) {
	return envtestutil.Kubeconfig(g.ClientConfig(user), fp.Addr(), token)
}
