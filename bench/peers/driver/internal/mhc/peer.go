package mhc

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
)

// peerFlags defines -mhc-caches and -mhc-peer on fs, into o: the caches
// may name a -mhc-peer, so they are checked once all flags are parsed
// (Defaults).
func (o *Options) peerFlags(fs *flag.FlagSet) {
	fs.Func("mhc-caches", "mhc run: ClusterCaches to run, in order: stock, adapter or a -mhc-peer NAME (default stock,adapter,adapter,stock: each order once; with -mhc-peer stock,adapter,NAME…,…NAME,adapter,stock)", func(v string) error {
		o.Caches = strings.Split(v, ",")
		return nil
	})
	fs.Func("mhc-peer", "mhc run: NAME=BINARY: a bench/peers/capi binary built from another tree (hack/before-after.sh), run with the adapter cache as the run NAME; repeatable", fleet.BinFlag(&o.Peers))
}

// Defaults checks the -mhc run's caches and -mhc-peer names and, without
// -mhc-caches, sets the order: stock, adapter, each -mhc-peer (by name),
// then the same backwards, so that every run has its mirror.
func (o *Options) Defaults() error {
	for name := range o.Peers {
		if name == "stock" || name == "adapter" {
			return fmt.Errorf("-mhc-peer %s: the name of a built-in cache", name)
		}
	}
	if len(o.Caches) == 0 {
		o.Caches = append([]string{"stock", "adapter"}, slices.Sorted(maps.Keys(o.Peers))...)
		for i := len(o.Caches) - 1; i >= 0; i-- {
			o.Caches = append(o.Caches, o.Caches[i])
		}
	}
	if err := fleet.CheckCaches(o.Caches, o.Peers); err != nil {
		return fmt.Errorf("-mhc-caches: %w", err)
	}
	return nil
}

// peer returns the binary and the -cache argument of the run named cache:
// a -mhc-peer's binary with the adapter, else bin with cache itself.
func (o Options) peer(bin, cache string) (string, string) {
	if b, ok := o.Peers[cache]; ok {
		return b, "adapter"
	}
	return bin, cache
}
