package main

import (
	"slices"

	"github.com/clusterpool/clusterpool/bench/sim"
)

// hasModel reports whether bench/sim models strategy: a -peer program
// (another tree's clusterpool, say) has no model to check it against.
func hasModel(strategy string) bool { return slices.Contains(sim.Strategies(), strategy) }
