// Package cachedread turns an uncached controller-runtime client into one
// that reads through an informer cache, deciding cache or apiserver per
// read exactly as controller-runtime's client with CacheOptions does
// (shouldBypassCache): a cluster then needs one client.New, not two, each
// with its own codecs, metadata client and REST clients. Writes and every
// other call go to the uncached client.
package cachedread
