package main

import (
	"context"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util/index"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// The chaos fleet's marks (bench/peers/driver's chaos run sets them): each
// Node carries its Cluster's name and incarnation (the how-manieth Cluster
// of that name), each Cluster its incarnation.
const (
	chaosClusterLabel = "chaos.clusterpool.dev/cluster"
	chaosIncarnation  = "chaos.clusterpool.dev/incarnation"
)

// crossing is a Node read through a cluster's client that is not that
// cluster's (bench/peers/protocol).
type crossing = protocol.Crossing

// hungCall is a call through the checked ClusterCache or its clients that
// outlived -hung-after (bench/peers/protocol).
type hungCall = protocol.HungCall

// call is a call in flight.
type call struct {
	op, cluster string
	start       time.Time
	reported    bool
}

// checks times the reconciler's calls through the ClusterCache and its
// clients, and checks the Nodes they read.
type checks struct {
	mgmt      client.Reader // the manager's cached client: the Clusters
	hungAfter time.Duration
	// listedNodes, if not nil, is told the reconcileID of each reconcile
	// that listed Nodes through a cluster's client without an error.
	listedNodes func(reconcileID string)

	mu       sync.Mutex
	next     uint64
	inflight map[uint64]*call
	crossed  []crossing
	hung     []hungCall
}

func newChecks(mgmt client.Reader, hungAfter time.Duration) *checks {
	return &checks{mgmt: mgmt, hungAfter: hungAfter, inflight: map[uint64]*call{}}
}

// begin registers a call; end ends it.
func (k *checks) begin(op string, cluster client.ObjectKey) uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.next++
	k.inflight[k.next] = &call{op: op, cluster: cluster.Name, start: time.Now()}
	return k.next
}

func (k *checks) end(id uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.inflight[id]
	delete(k.inflight, id)
	if d := time.Since(c.start); d > k.hungAfter && !c.reported {
		k.hung = append(k.hung, hungCall{Op: c.op, Cluster: c.cluster, StartUnixMs: c.start.UnixMilli(), Seconds: d.Seconds(), Ended: true})
	}
}

// scan reports the calls running for longer than hungAfter, once each.
func (k *checks) scan() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.inflight {
		if d := time.Since(c.start); d > k.hungAfter && !c.reported {
			c.reported = true
			k.hung = append(k.hung, hungCall{Op: c.op, Cluster: c.cluster, StartUnixMs: c.start.UnixMilli(), Seconds: d.Seconds()})
		}
	}
}

// take returns and forgets the crossings and hung calls found so far.
func (k *checks) take() ([]crossing, []hungCall) {
	k.mu.Lock()
	defer k.mu.Unlock()
	c, h := k.crossed, k.hung
	k.crossed, k.hung = nil, nil
	return c, h
}

// checkNode records a crossing if n, read through cluster's client, is
// marked as another cluster's, or as an earlier incarnation's than the
// Cluster the manager's cache holds now.
func (k *checks) checkNode(ctx context.Context, cluster client.ObjectKey, n *corev1.Node) {
	owner, ok := n.Labels[chaosClusterLabel]
	if !ok {
		return
	}
	var c clusterv1.Cluster
	if err := k.mgmt.Get(ctx, cluster, &c); err != nil {
		return
	}
	want, got := c.Annotations[chaosIncarnation], n.Labels[chaosIncarnation]
	if owner == cluster.Name && !older(got, want) {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.crossed = append(k.crossed, crossing{Cluster: cluster.Name, Node: n.Name, NodeCluster: owner,
		NodeIncarnation: got, ClusterIncarnation: want, UnixMs: time.Now().UnixMilli()})
}

// older reports whether incarnation a is older than b (both numbers).
func older(a, b string) bool {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	return errA == nil && errB == nil && x < y
}

// checkedCache is the ClusterCache the reconciler gets in -chaos: its
// GetClient is timed and returns a checkedClient.
type checkedCache struct {
	clustercache.ClusterCache
	k *checks
}

// GetClient is the ClusterCache's, timed; its client is checked.
func (c *checkedCache) GetClient(ctx context.Context, cluster client.ObjectKey) (client.Client, error) {
	id := c.k.begin("GetClient", cluster)
	cl, err := c.ClusterCache.GetClient(ctx, cluster)
	c.k.end(id)
	if err != nil {
		return nil, err
	}
	return &checkedClient{Client: cl, k: c.k, cluster: cluster}, nil
}

// checkedClient times Get and List, and checks the Nodes Get reads.
type checkedClient struct {
	client.Client
	k       *checks
	cluster client.ObjectKey
}

// Get is the client's, timed; a Node read is checked.
func (c *checkedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	id := c.k.begin("Get", c.cluster)
	err := c.Client.Get(ctx, key, obj, opts...)
	c.k.end(id)
	if n, ok := obj.(*corev1.Node); ok && err == nil {
		c.k.checkNode(ctx, c.cluster, n)
	}
	return err
}

// List is the client's, timed. The Nodes of a list by providerID (the
// Machine reconciler's read of a Machine's Node) are checked; a list of
// every Node is not: the fleet's workload apiservers each serve several
// clusters.
func (c *checkedClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	id := c.k.begin("List", c.cluster)
	err := c.Client.List(ctx, list, opts...)
	c.k.end(id)
	nodes, ok := list.(*corev1.NodeList)
	if !ok || err != nil {
		return err
	}
	if c.k.listedNodes != nil {
		c.k.listedNodes(string(controller.ReconcileIDFromContext(ctx)))
	}
	if byProviderID(opts) {
		for i := range nodes.Items {
			c.k.checkNode(ctx, c.cluster, &nodes.Items[i])
		}
	}
	return nil
}

// byProviderID reports whether opts select by the Node providerID field
// (Cluster API's index.NodeProviderIDField).
func byProviderID(opts []client.ListOption) bool {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	if lo.FieldSelector == nil {
		return false
	}
	_, ok := lo.FieldSelector.RequiresExactMatch(index.NodeProviderIDField)
	return ok
}
