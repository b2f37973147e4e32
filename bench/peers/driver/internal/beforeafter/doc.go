// Package beforeafter is the report of `make bench-before-after` (the
// driver's -before-after DIR): hack/before-after.sh runs issue 37's
// earlier bars on a before tree and on this working tree — the
// benchmarks, the soak, a bench-peers run and a bench-mhc run with the
// before tree's peers (-peer, -mhc-peer before=…) — and writes their raw
// outputs to DIR; this package reads them and runs nothing.
//
// Reading the report: a section per bar, a row per figure with before,
// after and after ÷ before, and a verdict: better, unchanged (within
// unchangedWithin of before), worse, or info for a figure that is
// neither; "Worse than before" lists the worse ones again. A figure never
// reached is null in the JSON.
package beforeafter
