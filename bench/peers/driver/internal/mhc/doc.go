// Package mhc is `make bench-mhc` (the driver's -mhc): Cluster API
// v1.14.2's real MachineHealthCheck reconciler (bench/peers/capi) on the
// stock ClusterCache and on clusterpool's drop-in, in turn, on one fleet
// with Machines, Nodes and a MachineHealthCheck per Cluster
// (fleet.MHCObjects). A seeded -fraction of the clusters is dead from the
// start and -mhc-flapping of them flap; every run gets the same layout, and
// the default order (stock, adapter, adapter, stock; -mhc-peer runs in the
// middle) gives every run its mirror.
//
// Reading the report: one table, a column per run and a row per figure
// (Rows): when the healthy clusters' Machines were checked and their
// MachineHealthChecks reported healthy, reconcile errors, dials and the
// peer's memory. Lower is better except in the rows that are only
// informational or where more is better; a value
// that was never reached prints as such. -mhc-from prints a report's -json
// file again.
package mhc
