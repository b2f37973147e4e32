// Command scenarios runs the controller simulation of package bench/sim:
// every scenario with every strategy, one after the other in one process,
// and prints one markdown table (and the headline ratios).
//
// `make bench-scenarios` runs it in virtual time, as the test TestScenarios
// with -table: each run in a synctest bubble (sim.RunVirtual), where a
// reconcile's 100 ms take exactly 100 ms and the strategies' code takes
// none, so the table shows the schedules alone, the same on any machine,
// in about 15 s:
//
//	go test -C bench ./cmd/scenarios -run '^TestScenarios$' -args -table -md scenarios.md -json scenarios.json
//
// As a command it runs the same table in scaled real time, the cross-check
// on a real clock (~10 min at DefaultScale):
//
//	go run -C bench ./cmd/scenarios -json scenarios.json
//
// There every duration is multiplied by -scale (3/100: 100 ms of reconcile
// work is 3 ms of real time); the herd (scenario 1) runs in real time, its
// Scenario.MinScale. The models' fixed real-time costs (scheduling, timer
// wake-ups, the library's own code) are magnified by 1/scale: a timer
// sleep overshoots by 0.3–0.7 ms, 10–20 % of a reconcile at 3/100, more in
// one model's process than another's, which made equal schedules differ by
// 1–2 % in throughput. The controllers run on controller-runtime's priority
// queue, its default; -legacy-queue runs them on client-go's workqueue, as
// controller-runtime before v0.22.
package main

// DefaultScale is the default of -scale (real-time runs only).
const DefaultScale = 0.03
