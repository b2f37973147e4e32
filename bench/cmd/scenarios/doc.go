// Command scenarios runs the controller simulation of package bench/sim:
// every scenario with every strategy, one after the other in one process,
// and prints one markdown table (and the headline ratios) to stdout.
//
//	go run ./bench/cmd/scenarios -json bench/results/scenarios.json
//
// It runs at DefaultScale (3/100: 100 ms of reconcile work is 3 ms of real
// time, ~10 min in all); the herd (scenario 1) runs in real time, its
// Scenario.MinScale. The models' fixed real-time costs (scheduling,
// timers, the library's own code under the clusterpool model) are
// magnified by 1/scale: at 1/100 they made a 1 µs cost look like 100 µs,
// and the same strategy's healthy throughput varied by up to 20 % from run
// to run; -scale 0.01 is the quick look (~4 min). The controllers run on
// controller-runtime's priority queue, its default; -legacy-queue runs
// them on client-go's workqueue, as controller-runtime before v0.22.
package main

// DefaultScale is the default of -scale.
const DefaultScale = 0.03
