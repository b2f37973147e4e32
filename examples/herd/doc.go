// Command herd is the clusterpool demo: worker goroutines reconcile objects
// of six "clusters" served on 127.0.0.1 — healthy ones, one that accepts and
// never answers (the dial times out), one that refuses connections and one
// that flaps — through one Pool, and print what each cluster cost them.
//
//	go run ./examples/herd -duration 10s
package main
