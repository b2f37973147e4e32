package fleet

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FlagGiven reports whether flag name was given on the command line.
func FlagGiven(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// BinFlag parses a repeatable NAME=BINARY flag (-peer, -mhc-peer) into
// dst: programs given, not built, by the name they run under.
func BinFlag(dst *map[string]string) func(string) error {
	return func(v string) error {
		name, bin, ok := strings.Cut(v, "=")
		if !ok || name == "" || bin == "" {
			return errors.New("want NAME=BINARY")
		}
		if *dst == nil {
			*dst = map[string]string{}
		}
		(*dst)[name] = bin
		return nil
	}
}

// CachesFlag parses a -…-caches flag into dst: ClusterCaches by name,
// "stock" or "adapter", comma-separated, in run order.
func CachesFlag(dst *[]string) func(string) error {
	return func(v string) error {
		caches := strings.Split(v, ",")
		if err := CheckCaches(caches, nil); err != nil {
			return err
		}
		*dst = caches
		return nil
	}
}

// CheckCaches fails unless every cache is "stock", "adapter" or a name
// of peers.
func CheckCaches(caches []string, peers map[string]string) error {
	known := []string{"stock", "adapter"}
	known = append(known, slices.Sorted(maps.Keys(peers))...)
	for _, c := range caches {
		if !slices.Contains(known, c) {
			return fmt.Errorf("unknown cache %q (%s)", c, strings.Join(known, ", "))
		}
	}
	return nil
}
