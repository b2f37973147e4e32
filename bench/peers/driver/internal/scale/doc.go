// Package scale is `make bench-scale` (the driver's -scale N1,N2,…): the
// fleet grows through the sizes, and at each the client-go floor
// (bench/peers/floor) and every peer in turn connect all Clusters, then
// idle. It counts the workload apiservers' requests and the peer's TCP
// connections per proxy in the idle window, then measures Gets under a
// steady load and times how soon the peer reports sampled clusters dead (a
// hung, a partitioned and a killed apiserver). Proxies live in child
// "proxy host" processes (ServeProxyHost) to stay under the fd limit.
//
// Reading the report: every figure is fitted per cluster over N (least
// squares) and printed as a ratio to the floor's, so 1.0× is what a bare
// client-go program costs; the detection table gives, per fault class, how
// many sampled clusters each peer reported not connected and how soon.
// -peer NAME=BINARY adds a program that speaks the same protocol (the hook
// for the Cluster API drop-in); -scale-from redoes the fits and tables of a
// report's -json file without running anything.
package scale
