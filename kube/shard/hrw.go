package shard

import "sigs.k8s.io/controller-runtime/pkg/client"

// Rendezvous (highest-random-weight) hashing: a key belongs to the member
// with the highest weight(member, key). Removing a member moves only its
// own keys (each to the member with the next-highest weight); adding one
// moves to it exactly the keys it now wins, about 1/N of them, and none
// between the others. Every replica computes the same owner from the same
// member list, without coordination.

// weight is the pseudo-random weight of member for key: FNV-1a of both,
// then a 64-bit finalizer so that similar names spread evenly.
func weight(member string, key client.ObjectKey) uint64 {
	h := fnvString(fnvOffset, member)
	h = fnvByte(h, 0)
	h = fnvString(h, key.Namespace)
	h = fnvByte(h, '/')
	return mix64(fnvString(h, key.Name))
}

// FNV-1a, inlined so that a weight allocates nothing.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvByte(h uint64, b byte) uint64 { return (h ^ uint64(b)) * fnvPrime }

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = fnvByte(h, s[i])
	}
	return h
}

// mix64 is the murmur3 64-bit finalizer.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// Owner returns the member of members that owns key by rendezvous hashing,
// or "" when members is empty. Ties (astronomically rare) go to the smaller
// name, so the result does not depend on the order of members.
func Owner(members []string, key client.ObjectKey) string {
	var best string
	var bestW uint64
	for i, m := range members {
		w := weight(m, key)
		if i == 0 || w > bestW || (w == bestW && m < best) {
			best, bestW = m, w
		}
	}
	return best
}
