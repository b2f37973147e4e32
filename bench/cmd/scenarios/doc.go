// Command scenarios runs the controller simulation of package bench/sim:
// every scenario with every strategy, one after the other in one process,
// and prints one markdown table (and the headline ratios) to stdout.
//
//	go run ./bench/cmd/scenarios -json bench/results/scenarios.json
package main
