package chaos

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// restore brings the fleet back to its shape at the start (m Clusters,
// cluster i on workload apiserver i mod k, each Node of a live Cluster's
// current incarnation on its home, no other marked Node), so that the end
// compares with the baseline: it deletes the added Clusters, re-creates
// (after gap) the moved ones on their first home, and deletes the other
// marked Nodes.
func (cf *chaosFleet) restore(ctx context.Context, m int, gap time.Duration) error {
	var moved []*chaosCluster
	for i := 0; ; i++ {
		c := cf.cluster(i)
		if c == nil {
			break
		}
		switch {
		case i >= m && c.Live:
			if err := cf.remove(ctx, c, true); err != nil {
				return err
			}
		case i < m && c.Home != i%len(cf.workload):
			if err := cf.remove(ctx, c, false); err != nil {
				return err
			}
			moved = append(moved, c)
		}
	}
	if len(moved) > 0 {
		sleepCtx(ctx, gap)
	}
	for _, c := range moved {
		i := 0
		fmt.Sscanf(c.Name, "c%d", &i)
		if err := cf.create(ctx, i, i%len(cf.workload), c.Incarnation+1); err != nil {
			return err
		}
	}
	for s := range cf.workload {
		if err := cf.deleteStrayNodes(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// deleteStrayNodes deletes the marked Nodes of workload apiserver s that
// are no live Cluster's there, of its current incarnation.
func (cf *chaosFleet) deleteStrayNodes(ctx context.Context, s int) error {
	current := map[string]string{}
	cf.mu.Lock()
	for _, c := range cf.clusters {
		if c != nil && c.Live && c.Home == s {
			current[c.Name] = strconv.Itoa(c.Incarnation)
		}
	}
	cf.mu.Unlock()
	var nodes corev1.NodeList
	if err := retry(ctx, func(ctx context.Context) error {
		return cf.workload[s].List(ctx, &nodes, client.HasLabels{chaosClusterLabel})
	}); err != nil {
		return err
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if current[n.Labels[chaosClusterLabel]] == n.Labels[chaosIncarnation] {
			continue
		}
		if err := retry(ctx, func(ctx context.Context) error { return client.IgnoreNotFound(cf.workload[s].Delete(ctx, n)) }); err != nil {
			return err
		}
	}
	return nil
}
