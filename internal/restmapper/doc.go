// Package restmapper gives each cluster a RESTMapper that reads the
// cluster's discovery on its first lookup and again when a lookup finds no
// match, as controller-runtime's dynamic RESTMapper does, but keeps no
// mapping of its own: it points at the mapping its Table holds for that
// discovery, shared with every cluster that reported the same (see
// mapperInput). A server without aggregated discovery gets a dynamic
// RESTMapper of its own instead.
//
// # Conditional reads
//
// A Mapper reads /api and /apis itself, as client-go's discovery client
// does, through the cluster's HTTP client, with If-None-Match the ETags
// of the discovery it last read, or, before its first, the ones its Table
// last read. Two 304 Not Modified give the mapping the Table holds for that
// pair of ETags, with no document downloaded; otherwise each document is
// downloaded once. This assumes an ETag identifies its document, whichever
// cluster sent it: kube-apiserver's is a SHA-512 of the document, so two
// clusters with equal ETags share a mapping. A server that sends no ETags
// is read in full each time.
//
// # Locks
//
// One lock, a leaf, held for a map operation (kube's
// TestLockOrderIsDocumented checks this list):
//
//  1. Table.mu: the shared mappings by digest and by ETags, and the ETags
//     last read.
//
// No lock is held across discovery: a Mapper's loads are a singleflight
// keyed by the mapping a load replaces (one discovery read for all the
// lookups that saw it).
package restmapper
