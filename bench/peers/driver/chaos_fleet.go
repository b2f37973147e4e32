package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/clusterpool/clusterpool/internal/envtestutil"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
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

// chaosCluster is one Cluster name's state in the chaos fleet.
type chaosCluster struct {
	Name        string
	Home        int // workload apiserver
	Incarnation int
	Proxy       *faultproxy.Proxy
	Kubeconfig  []byte // what its Secret holds when not faulted
	TokenGen    int
	Live        bool
}

// chaosFleet is a fleet whose Clusters the chaos run changes: it creates
// them itself (Nodes marked, tokens from auth), and keeps the proxies of
// deleted incarnations (retired) to check that nothing stays connected.
type chaosFleet struct {
	*fleet
	auth     *authenticator
	peer     string // the run's name in the tokens' identities
	machines int
	// workload are clients of the workload apiservers (10 s timeout).
	workload []client.Client

	mu       sync.Mutex
	clusters []*chaosCluster
	retired  map[string][]*faultproxy.Proxy // by Cluster name
	userMu   []sync.Mutex                   // envtest's AddUser, per workload apiserver
}

// newChaosFleet wraps f (started without Clusters).
func newChaosFleet(f *fleet, auth *authenticator, peer string, machines int) (*chaosFleet, error) {
	cf := &chaosFleet{fleet: f, auth: auth, peer: peer, machines: machines, retired: map[string][]*faultproxy.Proxy{},
		userMu: make([]sync.Mutex, len(f.Workload))}
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
	cf.mu.Lock()
	defer cf.mu.Unlock()
	var out []string
	for _, c := range cf.clusters {
		if c != nil && c.Live && c.Home == s {
			out = append(out, c.Name)
		}
	}
	return out
}

// live returns the live Clusters' names.
func (cf *chaosFleet) live() []string {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	var out []string
	for _, c := range cf.clusters {
		if c != nil && c.Live {
			out = append(out, c.Name)
		}
	}
	return out
}

// create creates cluster i (name cNNN) on workload apiserver home, as
// incarnation inc: its proxy, marked Nodes, Secret (a token), Cluster,
// BenchMachines, Machines and MachineHealthCheck (the last three only if
// missing).
func (cf *chaosFleet) create(ctx context.Context, i, home, inc int) error {
	name := fmt.Sprintf("c%03d", i)
	u, err := url.Parse(cf.Workload[home].Host)
	if err != nil {
		return err
	}
	p, err := faultproxy.New(u.Host)
	if err != nil {
		return err
	}
	c := &chaosCluster{Name: name, Home: home, Incarnation: inc, Proxy: p}
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
	if err := retry(ctx, func(ctx context.Context) error { return cf.createCluster(ctx, c) }); err != nil {
		return err
	}
	if err := cf.createMachines(ctx, name); err != nil {
		return err
	}
	err = retry(ctx, func(ctx context.Context) error {
		return ignoreExists(cf.mgmt.Create(ctx, mhcObject(name, chaosMHCSuffix[1:])))
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
	labels := map[string]string{clusterNameLabel: c.Name, chaosClusterLabel: c.Name, chaosIncarnation: strconv.Itoa(c.Incarnation)}
	node := &corev1.Node{}
	err := wc.Get(ctx, client.ObjectKey{Name: nodeName(c.Name, j)}, node)
	switch {
	case apierrors.IsNotFound(err):
		node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName(c.Name, j), Labels: labels},
			Spec: corev1.NodeSpec{ProviderID: providerID(c.Name, j)}}
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

// createCluster creates c's Cluster object (annotated with its
// incarnation, endpoint its proxy) and its status.
func (cf *chaosFleet) createCluster(ctx context.Context, c *chaosCluster) error {
	obj := clusterObject(c.Name, c.Proxy.Addr())
	obj.SetAnnotations(map[string]string{chaosIncarnation: strconv.Itoa(c.Incarnation)})
	if err := cf.mgmt.Create(ctx, obj); ignoreExists(err) != nil {
		return fmt.Errorf("creating Cluster %s: %w", c.Name, err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(clusterGVK)
	if err := cf.mgmt.Get(ctx, client.ObjectKey{Namespace: namespace, Name: c.Name}, got); err != nil {
		return err
	}
	status := clusterStatus()
	status["conditions"] = append(status["conditions"].([]any), map[string]any{"type": "InfrastructureReady", "status": "True",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "reason": "Ready", "message": ""})
	got.Object["status"] = status
	return cf.mgmt.Status().Update(ctx, got)
}

// writeSecret writes c's kubeconfig Secret with value (creating it if
// missing).
func (cf *chaosFleet) writeSecret(ctx context.Context, name string, value []byte) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-kubeconfig",
		Labels: map[string]string{clusterNameLabel: name}}, Type: "cluster.x-k8s.io/secret", Data: map[string][]byte{"value": value}}
	err := cf.mgmt.Create(ctx, s)
	if apierrors.IsAlreadyExists(err) {
		err = cf.mgmt.Update(ctx, s)
	}
	if err != nil {
		return fmt.Errorf("writing Secret of %s: %w", name, err)
	}
	return nil
}

// rotateToken gives c a new token (generation +1) and writes its Secret;
// the older generations stay valid until revokeTokens.
func (cf *chaosFleet) rotateToken(ctx context.Context, c *chaosCluster) error {
	cf.mu.Lock()
	c.TokenGen++
	id := identity{Peer: cf.peer, Cluster: c.Name, Gen: c.TokenGen}
	cf.mu.Unlock()
	kc, err := envtestutil.Kubeconfig(cf.Workload[c.Home], c.Proxy.Addr(), cf.auth.issue(id))
	if err != nil {
		return err
	}
	return cf.setKubeconfig(ctx, c, kc)
}

// setKubeconfig makes kc c's kubeconfig and writes it.
func (cf *chaosFleet) setKubeconfig(ctx context.Context, c *chaosCluster, kc []byte) error {
	cf.mu.Lock()
	c.Kubeconfig = kc
	cf.mu.Unlock()
	return retry(ctx, func(ctx context.Context) error { return cf.writeSecret(ctx, c.Name, kc) })
}

// revokeTokens revokes c's tokens older than its current generation.
func (cf *chaosFleet) revokeTokens(c *chaosCluster) {
	cf.mu.Lock()
	gen := c.TokenGen
	cf.mu.Unlock()
	cf.auth.revoke(func(id identity) bool { return id.Peer == cf.peer && id.Cluster == c.Name && id.Gen < gen })
}

// rotateCert gives c a new client certificate (its home apiserver's CA
// signs it; the old one stays valid) and writes its Secret.
func (cf *chaosFleet) rotateCert(ctx context.Context, c *chaosCluster) error {
	env := cf.envs[1+c.Home]
	cf.userMu[c.Home].Lock()
	u, err := env.AddUser(envtest.User{Name: "chaos:" + c.Name, Groups: []string{"system:masters"}}, cf.Workload[c.Home])
	cf.userMu[c.Home].Unlock()
	if err != nil {
		return fmt.Errorf("new client certificate for %s: %w", c.Name, err)
	}
	kc, err := envtestutil.Kubeconfig(u.Config(), c.Proxy.Addr(), "")
	if err != nil {
		return err
	}
	return cf.setKubeconfig(ctx, c, kc)
}

// remove deletes c's Cluster and Secret (and, if all, its
// MachineHealthCheck, Machines and BenchMachines) and retires its proxy
// (kept running, passing: a client that outlives the Cluster would go on
// reading the old Nodes).
func (cf *chaosFleet) remove(ctx context.Context, c *chaosCluster, all bool) error {
	cf.mu.Lock()
	c.Live = false
	cf.retired[c.Name] = append(cf.retired[c.Name], c.Proxy)
	cf.mu.Unlock()
	objs := []client.Object{clusterObject(c.Name, c.Proxy.Addr()),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: c.Name + "-kubeconfig"}}}
	if all {
		objs = append(objs, mhcObject(c.Name, chaosMHCSuffix[1:]))
	}
	for _, o := range objs {
		if err := retry(ctx, func(ctx context.Context) error { return client.IgnoreNotFound(cf.mgmt.Delete(ctx, o)) }); err != nil {
			return err
		}
	}
	if all {
		return cf.deleteMachines(ctx, c.Name)
	}
	return nil
}

// setInfrastructure sets c's status.initialization.infrastructureProvisioned.
func (cf *chaosFleet) setInfrastructure(ctx context.Context, name string, provisioned bool) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"initialization": map[string]any{"infrastructureProvisioned": provisioned}}})
	if err != nil {
		return err
	}
	obj := clusterObject(name, "127.0.0.1:1")
	return retry(ctx, func(ctx context.Context) error {
		return cf.mgmt.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
	})
}

// poke annotates what key names (see keysOf): a Cluster's
// MachineHealthCheck, or a Machine; that makes its reconciler reconcile
// it.
func (cf *chaosFleet) poke(ctx context.Context, key string) error {
	obj := client.Object(mhcObject(key, chaosMHCSuffix[1:]))
	if isMachine(key) {
		obj = namedObject(machineGVK, key)
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, chaosPoke, strconv.FormatInt(time.Now().UnixNano(), 10))
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return client.IgnoreNotFound(cf.mgmt.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)))
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

// closeRetired closes the retired proxies.
func (cf *chaosFleet) closeRetired() {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	for _, ps := range cf.retired {
		for _, p := range ps {
			p.Close()
		}
	}
	for _, c := range cf.clusters {
		if c != nil && c.Proxy != nil {
			c.Proxy.Close()
		}
	}
}

// deleteSecret deletes cluster name's kubeconfig Secret.
func (cf *chaosFleet) deleteSecret(ctx context.Context, name string) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-kubeconfig"}}
	return client.IgnoreNotFound(cf.mgmt.Delete(ctx, s))
}
