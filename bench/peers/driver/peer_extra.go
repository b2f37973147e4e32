package main

import (
	"errors"
	"slices"
	"strings"

	"github.com/clusterpool/clusterpool/bench/sim"
)

// binFlag parses a repeatable NAME=BINARY flag (-peer, -mhc-peer) into
// dst: programs given, not built, by the name they run under.
func binFlag(dst *map[string]string) func(string) error {
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

// hasModel reports whether bench/sim models strategy: a -peer program
// (another tree's clusterpool, say) has no model to check it against.
func hasModel(strategy string) bool { return slices.Contains(sim.Strategies(), strategy) }
