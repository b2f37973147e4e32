// Package restmapper gives each cluster a RESTMapper that reads the
// cluster's discovery on its first lookup and again when a lookup finds no
// match, as controller-runtime's dynamic RESTMapper does, but keeps no
// mapping of its own: it points at the mapping its Table holds for that
// discovery, shared with every cluster that reported the same (see
// mapperInput). A server without aggregated discovery gets a dynamic
// RESTMapper of its own instead.
//
// # Locks
//
// One lock, a leaf, held for a map operation (kube's
// TestLockOrderIsDocumented checks this list):
//
//  1. Table.mu: the shared mappings by digest.
//
// No lock is held across discovery: a Mapper's loads are a singleflight
// keyed by the mapping a load replaces (one discovery read for all the
// lookups that saw it).
package restmapper
