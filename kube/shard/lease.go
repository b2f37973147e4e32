package shard

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// leases reads and writes the group's Leases. Reads go straight to the
// apiserver (the client must not read from a cache), so that a read sent
// at time t reflects every write acknowledged before t: a stale cache could
// show a live member as expired. Not safe for concurrent use: one renewal
// runs at a time.
type leases struct {
	c        client.Client
	key      client.ObjectKey // this replica's Lease
	group    string
	identity string
	seconds  int32
	cur      *coordinationv1.Lease // as last written; nil: read it first
}

// renew writes this replica's Lease with renewTime now, creating it if
// needed. An error (a conflict included) leaves the next renewal to read
// the Lease afresh.
func (l *leases) renew(ctx context.Context, now time.Time) error {
	if l.cur == nil {
		var cur coordinationv1.Lease
		err := l.c.Get(ctx, l.key, &cur)
		switch {
		case apierrors.IsNotFound(err):
			return l.create(ctx, now)
		case err != nil:
			return fmt.Errorf("shard: reading Lease %s: %w", l.key, err)
		}
		l.cur = &cur
	}
	next := l.cur.DeepCopy()
	l.fill(next, now)
	if err := l.c.Update(ctx, next); err != nil {
		l.cur = nil
		return fmt.Errorf("shard: renewing Lease %s: %w", l.key, err)
	}
	l.cur = next
	return nil
}

func (l *leases) create(ctx context.Context, now time.Time) error {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: l.key.Namespace, Name: l.key.Name}}
	l.fill(lease, now)
	lease.Spec.AcquireTime = lease.Spec.RenewTime
	if err := l.c.Create(ctx, lease); err != nil {
		return fmt.Errorf("shard: creating Lease %s: %w", l.key, err)
	}
	l.cur = lease
	return nil
}

// fill sets the fields this replica owns in lease.
func (l *leases) fill(lease *coordinationv1.Lease, now time.Time) {
	if lease.Labels == nil {
		lease.Labels = map[string]string{}
	}
	lease.Labels[GroupLabel] = l.group
	rt := metav1.NewMicroTime(now)
	lease.Spec.HolderIdentity = &l.identity
	lease.Spec.LeaseDurationSeconds = &l.seconds
	lease.Spec.RenewTime = &rt
}

// list reads the group's Leases.
func (l *leases) list(ctx context.Context) ([]leaseInfo, error) {
	var list coordinationv1.LeaseList
	if err := l.c.List(ctx, &list, client.InNamespace(l.key.Namespace), client.MatchingLabels{GroupLabel: l.group}); err != nil {
		return nil, fmt.Errorf("shard: listing the Leases of group %q: %w", l.group, err)
	}
	out := make([]leaseInfo, 0, len(list.Items))
	for _, it := range list.Items {
		s := it.Spec
		if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.LeaseDurationSeconds == nil || *s.LeaseDurationSeconds <= 0 {
			continue
		}
		out = append(out, leaseInfo{holder: *s.HolderIdentity, version: it.ResourceVersion,
			duration: time.Duration(*s.LeaseDurationSeconds) * time.Second})
	}
	return out, nil
}

// release deletes this replica's Lease (only the incarnation it wrote, if
// it knows it). A Lease already gone is not an error.
func (l *leases) release(ctx context.Context) error {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: l.key.Namespace, Name: l.key.Name}}
	var opts []client.DeleteOption
	if l.cur != nil && l.cur.UID != "" {
		opts = append(opts, client.Preconditions{UID: &l.cur.UID})
	}
	if err := l.c.Delete(ctx, lease, opts...); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("shard: deleting Lease %s: %w", l.key, err)
	}
	l.cur = nil
	return nil
}
