// Package watchgzip decompresses the apiserver's compressed watch streams
// member by member, so that an idle watch holds no decompressor.
//
// The apiserver compresses a watch that streams its initial list
// (sendInitialEvents, client-go's default WatchList) when the client
// accepts gzip, and keeps compressing it for the stream's whole life: each
// flush (each event, once the list is sent) is a gzip member of its own.
// Go's HTTP transports decompress it with one gzip.Reader per response,
// whose decompressor (a 32 KiB window and its tables) lives as long as the
// watch, idle or not: one per informer per cluster. RoundTrip asks for gzip
// itself on watches, so that the transport leaves the body compressed, and
// decompresses it with readers taken from a pool for the length of a
// member only. The wire is the same as client-go's.
//
// # Locks
//
// One lock, a leaf, never held across a read of the body (kube's
// TestLockOrderIsDocumented checks this list):
//
//  1. members.mu: whether a Read runs and whether Close came.
package watchgzip
