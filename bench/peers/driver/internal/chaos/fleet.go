package chaos

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
	"github.com/clusterpool/clusterpool/internal/grayproxy"
)

// The marks the capi peer's -chaos checks read (bench/peers/capi's
// chaoscheck.go): each Node carries its Cluster's name and incarnation,
// each Cluster its incarnation.
const (
	chaosClusterLabel = "chaos.clusterpool.dev/cluster"
	chaosIncarnation  = "chaos.clusterpool.dev/incarnation"
	chaosPoke         = "chaos.clusterpool.dev/poke"
	chaosMHCSuffix    = "-chaos"
)

// chaosCluster is one Cluster name's state in the chaos fleet: what every
// plane shares (its home workload apiserver, incarnation, token
// generation, liveness) and what each plane has of its own (its proxy,
// its kubeconfig), indexed by chaosPlane.index.
type chaosCluster struct {
	Name        string
	Home        int // workload apiserver
	Incarnation int
	Proxies     []*faultproxy.Proxy // per plane; set before the cluster is registered, never changed
	Grays       []*grayproxy.Proxy  // per plane, behind Proxies (chain.go); likewise
	Kubeconfigs [][]byte            // per plane: what its Secret holds when not faulted
	TokenGen    int
	Live        bool
}

// chaosFleet is the workload fleet every plane shares and the Clusters the
// chaos run changes: it creates them itself on every plane (Nodes marked
// once, on the shared workload apiserver; tokens from auth), and keeps the
// proxies of deleted incarnations (retired, per plane) to check that
// nothing stays connected. Each Cluster is reached through a chain of
// proxies per plane (chain.go): trust is the gray proxies'.
type chaosFleet struct {
	*fleet.Fleet // its Workload and envs[1:] are the shared workload apiservers
	planes       []*chaosPlane
	auth         *fleet.Authenticator
	trust        *fleet.GrayTrust
	machines     int
	// workload are clients of the workload apiservers (10 s timeout).
	workload []client.Client

	mu       sync.Mutex
	clusters []*chaosCluster
	retired  []map[string][]*faultproxy.Proxy // per plane, by Cluster name
	grays    []*grayproxy.Proxy               // behind the retired ones, to close at the end (Close is idempotent)
	userMu   []sync.Mutex                     // envtest's AddUser, per workload apiserver
}

// newChaosFleet wraps f (started without Clusters) and the planes.
func newChaosFleet(f *fleet.Fleet, planes []*chaosPlane, auth *fleet.Authenticator, machines int) (*chaosFleet, error) {
	trust, err := f.NewGrayTrust()
	if err != nil {
		return nil, err
	}
	cf := &chaosFleet{Fleet: f, planes: planes, auth: auth, trust: trust, machines: machines,
		retired: make([]map[string][]*faultproxy.Proxy, len(planes)), userMu: make([]sync.Mutex, len(f.Workload))}
	for i := range cf.retired {
		cf.retired[i] = map[string][]*faultproxy.Proxy{}
	}
	for _, cfg := range f.Workload {
		cfg = rest.CopyConfig(cfg)
		cfg.Timeout = 10 * time.Second
		c, err := client.New(cfg, client.Options{})
		if err != nil {
			return nil, fmt.Errorf("workload client: %w", err)
		}
		cf.workload = append(cf.workload, c)
	}
	return cf, nil
}

// cluster returns cluster i (nil if there is none yet).
func (cf *chaosFleet) cluster(i int) *chaosCluster {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	if i >= len(cf.clusters) {
		return nil
	}
	return cf.clusters[i]
}

// onAPIServer returns the live Clusters whose home is workload apiserver s.
func (cf *chaosFleet) onAPIServer(s int) []string {
	return cf.liveWhere(func(c *chaosCluster) bool { return c.Home == s })
}

// live returns the live Clusters' names.
func (cf *chaosFleet) live() []string {
	return cf.liveWhere(func(*chaosCluster) bool { return true })
}

// liveWhere returns the names of the live Clusters keep keeps.
func (cf *chaosFleet) liveWhere(keep func(*chaosCluster) bool) []string {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	var out []string
	for _, c := range cf.clusters {
		if c != nil && c.Live && keep(c) {
			out = append(out, c.Name)
		}
	}
	return out
}

// create creates cluster i (name cNNN) on workload apiserver home, as
// incarnation inc: its marked Nodes (once, on the shared workload
// apiserver), a proxy chain per plane (chain.go), then on every plane at
// once its Secret (a token, through the plane's chain),
// its Cluster, BenchMachines, Machines and MachineHealthCheck (the last
// three only if missing).
func (cf *chaosFleet) create(ctx context.Context, i, home, inc int) error {
	name := fmt.Sprintf("c%03d", i)
	c := &chaosCluster{Name: name, Home: home, Incarnation: inc, Proxies: make([]*faultproxy.Proxy, len(cf.planes)),
		Grays: make([]*grayproxy.Proxy, len(cf.planes)), Kubeconfigs: make([][]byte, len(cf.planes))}
	for j := range c.Proxies {
		var err error
		if c.Proxies[j], c.Grays[j], err = newChain(cf.Fleet, cf.trust, home); err != nil {
			c.closeProxies()
			return err
		}
	}
	cf.mu.Lock()
	for len(cf.clusters) <= i {
		cf.clusters = append(cf.clusters, nil)
	}
	if old := cf.clusters[i]; old != nil {
		c.TokenGen = old.TokenGen
	}
	cf.clusters[i] = c
	cf.mu.Unlock()
	for j := range cf.machines {
		if err := retry(ctx, func(ctx context.Context) error { return cf.upsertNode(ctx, c, j) }); err != nil {
			return err
		}
	}
	if err := cf.rotateToken(ctx, c); err != nil {
		return err
	}
	err := onAll(ctx, cf.planes, func(ctx context.Context, p *chaosPlane) error {
		err := retry(ctx, func(ctx context.Context) error { return p.createCluster(ctx, name, c.Proxies[p.index].Addr(), inc) })
		if err == nil {
			err = p.createMachines(ctx, name, cf.machines)
		}
		if err == nil {
			err = p.createMHC(ctx, name)
		}
		return err
	})
	cf.mu.Lock()
	c.Live = err == nil
	cf.mu.Unlock()
	return err
}

// ignoreExists is err unless it says the object exists.
func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// upsertNode creates or updates c's j-th Node on its home apiserver,
// marked with c's name and incarnation, Ready.
func (cf *chaosFleet) upsertNode(ctx context.Context, c *chaosCluster, j int) error {
	wc := cf.workload[c.Home]
	labels := map[string]string{fleet.ClusterNameLabel: c.Name, chaosClusterLabel: c.Name, chaosIncarnation: strconv.Itoa(c.Incarnation)}
	node := &corev1.Node{}
	err := wc.Get(ctx, client.ObjectKey{Name: fleet.NodeName(c.Name, j)}, node)
	switch {
	case apierrors.IsNotFound(err):
		node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fleet.NodeName(c.Name, j), Labels: labels},
			Spec: corev1.NodeSpec{ProviderID: fleet.ProviderID(c.Name, j)}}
		if err := wc.Create(ctx, node); err != nil {
			return fmt.Errorf("creating Node %s: %w", node.Name, err)
		}
	case err != nil:
		return err
	default:
		node.Labels = labels
		if err := wc.Update(ctx, node); err != nil {
			return fmt.Errorf("marking Node %s: %w", node.Name, err)
		}
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.Now(), Reason: "KubeletReady"}}
	return wc.Status().Update(ctx, node)
}

// rotateToken gives c a new token generation (+1) and writes every
// plane's Secret with a token of it (one per plane, its identity naming
// the plane's cache); the older generations stay valid until
// revokeTokens.
func (cf *chaosFleet) rotateToken(ctx context.Context, c *chaosCluster) error {
	cf.mu.Lock()
	c.TokenGen++
	gen := c.TokenGen
	cf.mu.Unlock()
	return onAll(ctx, cf.planes, func(ctx context.Context, p *chaosPlane) error {
		id := fleet.Identity{Peer: p.cache, Cluster: c.Name, Gen: gen}
		kc, err := chainKubeconfig(c.Proxies[p.index], c.Grays[p.index], cf.Workload[c.Home], cf.auth.Issue(id))
		if err != nil {
			return err
		}
		return cf.setKubeconfig(ctx, p, c, kc)
	})
}

// setKubeconfig makes kc c's kubeconfig on plane p and writes it.
func (cf *chaosFleet) setKubeconfig(ctx context.Context, p *chaosPlane, c *chaosCluster, kc []byte) error {
	cf.mu.Lock()
	c.Kubeconfigs[p.index] = kc
	cf.mu.Unlock()
	return retry(ctx, func(ctx context.Context) error { return p.writeSecret(ctx, c.Name, kc) })
}

// revokeTokens revokes c's tokens older than its current generation, on
// every plane.
func (cf *chaosFleet) revokeTokens(c *chaosCluster) {
	cf.mu.Lock()
	gen := c.TokenGen
	cf.mu.Unlock()
	cf.auth.Revoke(func(id fleet.Identity) bool {
		return id.Cluster == c.Name && id.Gen < gen && slices.ContainsFunc(cf.planes, func(p *chaosPlane) bool { return p.cache == id.Peer })
	})
}

// rotateCert gives c a new client certificate (its home apiserver's CA
// signs it; the old one stays valid) and writes every plane's Secret with
// it.
func (cf *chaosFleet) rotateCert(ctx context.Context, c *chaosCluster) error {
	env := cf.Envs[1+c.Home]
	cf.userMu[c.Home].Lock()
	u, err := env.AddUser(envtest.User{Name: "chaos:" + c.Name, Groups: []string{"system:masters"}}, cf.Workload[c.Home])
	cf.userMu[c.Home].Unlock()
	if err != nil {
		return fmt.Errorf("new client certificate for %s: %w", c.Name, err)
	}
	return onAll(ctx, cf.planes, func(ctx context.Context, p *chaosPlane) error {
		kc, err := chainKubeconfig(c.Proxies[p.index], c.Grays[p.index], u.Config(), "")
		if err != nil {
			return err
		}
		return cf.setKubeconfig(ctx, p, c, kc)
	})
}

// restoreSecrets writes back every plane's kubeconfig of c.
func (cf *chaosFleet) restoreSecrets(ctx context.Context, c *chaosCluster) error {
	return onAll(ctx, cf.planes, func(ctx context.Context, p *chaosPlane) error {
		cf.mu.Lock()
		kc := c.Kubeconfigs[p.index]
		cf.mu.Unlock()
		return retry(ctx, func(ctx context.Context) error { return p.writeSecret(ctx, c.Name, kc) })
	})
}

// remove deletes c's Cluster and Secret (and, if all, its
// MachineHealthCheck, Machines and BenchMachines) on every plane, and
// retires its proxies (kept running, passing: a client that outlives the
// Cluster would go on reading the old Nodes).
func (cf *chaosFleet) remove(ctx context.Context, c *chaosCluster, all bool) error {
	cf.mu.Lock()
	c.Live = false
	for j, p := range c.Proxies {
		cf.retired[j][c.Name] = append(cf.retired[j][c.Name], p)
	}
	cf.grays = append(cf.grays, c.Grays...)
	cf.mu.Unlock()
	machines := cf.machinesOf([]string{c.Name})
	return onAll(ctx, cf.planes, func(ctx context.Context, p *chaosPlane) error {
		return p.removeCluster(ctx, c.Name, all, machines)
	})
}

// retiredOpen counts, per Cluster name, the connections open to plane j's
// retired proxies.
func (cf *chaosFleet) retiredOpen(j int) map[string]int {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	out := map[string]int{}
	for name, ps := range cf.retired[j] {
		for _, p := range ps {
			out[name] += p.Open()
		}
	}
	return out
}

// retryFor bounds retry: the management apiserver may be down (restarted)
// or a workload apiserver stopped.
const retryFor = 3 * time.Minute

// retry runs fn (with a 15 s timeout) until it succeeds, for retryFor at
// most, once a second.
func retry(ctx context.Context, fn func(context.Context) error) error {
	deadline := time.Now().Add(retryFor)
	for {
		actx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := fn(actx)
		cancel()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// closeProxies closes every proxy, retired or current.
func (cf *chaosFleet) closeProxies() {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	for _, byName := range cf.retired {
		for _, ps := range byName {
			for _, p := range ps {
				p.Close()
			}
		}
	}
	for _, g := range cf.grays {
		g.Close()
	}
	for _, c := range cf.clusters {
		if c != nil {
			c.closeProxies()
		}
	}
}

// closeProxies closes c's proxies (those it has).
func (c *chaosCluster) closeProxies() {
	for j := range c.Proxies {
		if c.Proxies[j] != nil {
			c.Proxies[j].Close()
		}
		if c.Grays[j] != nil {
			c.Grays[j].Close()
		}
	}
}

// isLive reports whether c is live.
func (cf *chaosFleet) isLive(c *chaosCluster) bool {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	return c.Live
}
