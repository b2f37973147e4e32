package shard

import (
	"slices"
	"time"
)

// leaseInfo is what a replica reads of one Lease of its group.
type leaseInfo struct {
	holder   string        // spec.holderIdentity
	version  string        // metadata.resourceVersion: changes on every renewal
	duration time.Duration // spec.leaseDurationSeconds
}

// observed is one member's Lease as this replica has seen it.
type observed struct {
	version  string
	seen     time.Time // local time this version was first read
	duration time.Duration
}

// roster derives the live members from successive reads of the group's
// Leases. Like client-go's leader election it never compares another
// replica's renewTime with the local clock: a member is live until its
// Lease's duration has passed since this replica first read the Lease's
// current version. The holder wrote that version before it was read, so
// the local deadline is never earlier than the holder's own (the holder
// stops owning RenewDeadline after it started the renewal, and
// RenewDeadline < LeaseDuration), whatever the clocks' offsets.
//
// A Lease that is no longer listed is gone at once: a replica deletes its
// Lease only after it has stopped owning everything. This assumes that
// only a Lease's holder writes or deletes it.
type roster struct {
	seen map[string]observed
}

// update records a read of the group's Leases that was sent at sent and
// answered at recv, and returns the members that were live at sent, sorted.
func (r *roster) update(leases []leaseInfo, sent, recv time.Time) []string {
	next := make(map[string]observed, len(leases))
	for _, l := range leases {
		o, ok := r.seen[l.holder]
		if !ok || o.version != l.version || o.duration != l.duration {
			o = observed{version: l.version, seen: recv, duration: l.duration}
		}
		next[l.holder] = o
	}
	r.seen = next
	live := make([]string, 0, len(next))
	for h, o := range next {
		if sent.Before(o.seen.Add(o.duration)) {
			live = append(live, h)
		}
	}
	slices.Sort(live)
	return live
}
