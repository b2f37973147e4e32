// Command driver is `make bench-peers`: it starts one fleet on 127.0.0.1 —
// a management kube-apiserver with Cluster API's Cluster CRD, M Cluster
// objects with their <name>-kubeconfig Secrets and N objects each, every
// Cluster behind its own fault proxy in front of one of K workload
// apiservers — and runs each peer program (bench/peers/cct: Cluster API
// v1.8.4's ClusterCacheTracker, bench/peers/clustercache: v1.14.2's
// ClusterCache, bench/peers/clusterpool: this repository) against it in
// turn, scenario by scenario, switching the proxies as the scenario says.
// It prints one table of the real figures, then runs bench/sim at the same
// scale and timings and prints model against real.
//
// The Cluster CRD is examples/capi's v1beta2 one with a v1beta1 version
// added (conversion None, v1beta1 stored with its fields preserved), so
// that v1.8.4 reads v1beta1 Clusters (status.infrastructureReady and the
// ControlPlaneInitialized condition, which its health checker waits for)
// and v1.14.2 reads v1beta2 ones
// (status.initialization.infrastructureProvisioned, which its connector
// waits for) from the same objects.
//
// With -scale N1,N2,… it is `make bench-scale` instead: the fleet grows
// through the sizes, and at each the client-go floor (bench/peers/floor)
// and every peer in turn connect all Clusters, then idle; the driver counts
// the workload apiservers' requests and the peer's TCP connections per
// proxy in the idle window, then measures Gets under a steady load and
// times how soon the peer reports sampled clusters dead (a hung, a
// partitioned and a killed apiserver; proxies live in child "proxy host"
// processes to stay under the fd limit), fits every figure per cluster
// over N (least squares) and prints it as a ratio to the floor's
// (internal/scale). -peer NAME=BINARY adds a program that speaks the same
// protocol (the hook for the Cluster API drop-in).
//
// With -gray it is `make bench-gray`: every Cluster behind an HTTP-level
// fault proxy (internal/grayproxy), some slow, erroring or throttled; each
// peer once without and once with the faults (internal/peers).
//
// With -mhc it is `make bench-mhc`: Cluster API v1.14.2's real
// MachineHealthCheck reconciler (bench/peers/capi) on the stock
// ClusterCache and on clusterpool's drop-in, with Machines, Nodes and
// MachineHealthChecks added to the fleet (internal/mhc). With -rotation it is
// `make bench-rotation`: every kubeconfig Secret gets a new bearer token on
// a schedule and the old one is revoked by a token webhook the driver
// serves on 127.0.0.1; relists, 401s, new connections, time not connected
// and failed reconciles are counted per rotation (internal/rotation).
// With -chaos (-chaos-short) it is `make chaos` (`make chaos-short`):
// overlapping seeded faults on the drop-in's and the stock ClusterCache's
// managers at once, judged by verdicts (internal/chaos); with -before-after
// DIR the before/after report of hack/before-after.sh's outputs
// (internal/beforeafter).
//
// Layout: this package is only the command line — flag parsing, picking
// the experiment, signal handling. internal/fleet is what every experiment
// shares (apiserver processes, the fleet and its fault proxies, CRDs,
// Machines, the token authenticator, peer builds, scenarios, the shared
// flags); internal/peers, internal/scale, internal/mhc, internal/rotation,
// internal/chaos and internal/beforeafter are one experiment each, with
// Options, Register for its flags and Run, and a doc.go on its report.
//
// Peer binaries are built by bench/peers/build.sh into bin/peers/ (keyed by
// version and a digest of their sources) and talk to the driver with flags
// in and one JSON object out (bench/peers/workload).
package main
