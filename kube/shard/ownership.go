package shard

import (
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// round is one completed renewal: this replica's Lease written and the
// group's Leases read.
type round struct {
	start    time.Time // before the renewal was sent
	listSent time.Time // before the group's Leases were requested
	end      time.Time // after they were read
	leases   []leaseInfo
	keys     []client.ObjectKey
	keysOK   bool // keys were listed; otherwise the previous keys stand
}

// ownership is one replica's view of the group and the clusters it owns.
// It does no I/O and reads no clock: every method takes the time, so that
// the protocol is tested with exact instants. It is not safe for concurrent
// use; the Sharder guards it with its mutex.
//
// A term is a run of rounds, each completed before the validity of the
// previous one ran out. Within a term:
//   - validUntil is the start of the latest completed round plus
//     RenewDeadline; at validUntil the replica stops owning (fence).
//   - The replica claims nothing until joinedAt + LeaseDuration (hand-over),
//     joinedAt being the end of the term's first round.
//
// A round that completes at or after validUntil starts a new term: the
// replica may have been seen as expired, and must hand over again.
type ownership struct {
	self          string
	renewDeadline time.Duration
	leaseDuration time.Duration

	roster     roster
	members    []string // live members at the latest round, sorted, self included
	keys       []client.ObjectKey
	validUntil time.Time
	joinedAt   time.Time // zero outside a term
	claiming   bool      // the term's hand-over delay has passed
	owned      map[client.ObjectKey]struct{}
}

func newOwnership(self string, renewDeadline, leaseDuration time.Duration) *ownership {
	return &ownership{self: self, renewDeadline: renewDeadline, leaseDuration: leaseDuration,
		owned: map[client.ObjectKey]struct{}{}}
}

// completed applies a round that completed at r.end and returns the
// ownership changes, which take effect at now (≥ r.end).
func (o *ownership) completed(r round, now time.Time) []Event {
	var evs []Event
	if r.end.Before(o.validUntil) {
		o.validUntil = later(o.validUntil, r.start.Add(o.renewDeadline))
	} else {
		evs = o.fence(o.validUntil)
		o.joinedAt = r.end
		o.validUntil = r.start.Add(o.renewDeadline)
	}
	live := o.roster.update(r.leases, r.listSent, r.end)
	o.members = insertSorted(live, o.self)
	if r.keysOK {
		o.keys = r.keys
	}
	evs = append(evs, o.advance(now)...)
	return append(evs, o.reassign(now)...)
}

// advance applies the passing of time up to now: the fence at validUntil,
// then the end of the hand-over delay.
func (o *ownership) advance(now time.Time) []Event {
	if !o.validUntil.IsZero() && !now.Before(o.validUntil) {
		return o.fence(o.validUntil)
	}
	if !o.claiming && !o.joinedAt.IsZero() && !now.Before(o.claimAt()) {
		o.claiming = true
		return o.reassign(now)
	}
	return nil
}

// next is when advance has work to do, or zero.
func (o *ownership) next() time.Time {
	switch {
	case o.joinedAt.IsZero():
		return time.Time{}
	case !o.claiming && o.claimAt().Before(o.validUntil):
		return o.claimAt()
	}
	return o.validUntil
}

func (o *ownership) claimAt() time.Time { return o.joinedAt.Add(o.leaseDuration) }

// fence ends the term: every owned key is lost at the instant at.
func (o *ownership) fence(at time.Time) []Event {
	o.joinedAt, o.claiming, o.validUntil = time.Time{}, false, time.Time{}
	evs := make([]Event, 0, len(o.owned))
	for k := range o.owned {
		evs = append(evs, Event{Type: Lost, Key: k, Time: at})
	}
	clear(o.owned)
	return evs
}

// reassign makes the owned set match the current view at now.
func (o *ownership) reassign(now time.Time) []Event {
	var evs []Event
	want := make(map[client.ObjectKey]struct{}, len(o.owned))
	if o.claiming && now.Before(o.validUntil) {
		for _, k := range o.keys {
			if Owner(o.members, k) == o.self {
				want[k] = struct{}{}
			}
		}
	}
	for k := range o.owned {
		if _, ok := want[k]; !ok {
			evs = append(evs, Event{Type: Lost, Key: k, Time: now})
		}
	}
	for k := range want {
		if _, ok := o.owned[k]; !ok {
			evs = append(evs, Event{Type: Gained, Key: k, Time: now})
		}
	}
	o.owned = want
	return evs
}

// owns reports whether the replica owns key at now. For the keys of the
// latest listing it agrees with the owned set at every instant, given that
// advance runs at validUntil; other keys (clusters created since) are
// decided by the same rule.
func (o *ownership) owns(key client.ObjectKey, now time.Time) bool {
	return o.claiming && now.Before(o.validUntil) && Owner(o.members, key) == o.self
}

// insertSorted adds v to the sorted s unless it is there.
func insertSorted(s []string, v string) []string {
	i, found := slices.BinarySearch(s, v)
	if found {
		return s
	}
	return slices.Insert(s, i, v)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
