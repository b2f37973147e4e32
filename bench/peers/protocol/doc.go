// Package protocol is what bench/peers/driver and the peer programs it runs
// (bench/peers/workload's cct, clustercache and clusterpool peers, the
// client-go floor and the Cluster API peer bench/peers/capi) say to each
// other: flags go in, and one JSON object (Figures, MHCFigures) or a line
// per sample (ChaosSample) comes out on stdout; markers on stderr and lines
// on stdin pace a scale run's idle and fault windows.
// PeerFlags are the flags that every program connecting the fleet reads;
// ReadReport reads back a report the driver wrote with -json.
//
// It is a module of its own and links nothing but the standard library, so
// that every peer module, whatever Kubernetes libraries it resolves, and the
// bench module import the same types: the writer and the reader of each
// field are one declaration.
//
// # The command line
//
// The driver runs PEER -kubeconfig F -namespace fleet -roles
// c000=healthy,c001=dead,… -objects N -workers 10 -work 100ms -duration D
// -saturate=B -bucket 5s; the peer prints one JSON object (Figures) on
// stdout and exits. PEER_LOG=1 sends the peers' controller-runtime logs to
// stderr.
//
// Scale runs add -idle D -watch-nodes: once every measured object
// reconciled, the peer prints "bench-peers: idle start" (IdleMarker) on
// stderr, stays idle for D, prints "bench-peers: idle end", waits for a
// line on stdin (the driver counts the peer's TCP connections per proxy
// from /proc meanwhile) and adds its idle figures (CPU, heap, requests) to
// the JSON. Then, with -load-rate R -load-window W, it runs the load window
// (summaries under timings: load_get, load_get_failed); with
// -sample-connected P -sample-clusters C1,… -detect-within B, it samples
// those clusters, prints "bench-peers: idle faults" (FaultsMarker), waits
// for the driver's line (the faults are in force), samples until each was
// reported not connected or B passed, and reports the samples under
// availability. The driver passes these flags only to a peer whose -h lists
// them (an older -peer build skips the phase). -peer NAME=BINARY runs any
// other program speaking this protocol (the hook for the Cluster API
// drop-in in clusterapi/). PEER_HEAPPROFILE=FILE makes a peer write its
// heap profile at the end of the idle window.
//
// The gray run adds -measure-from MS (Unix ms: when the faults start; the
// healthy clusters' successful-reconcile p99 and the requests sent per
// workload host count from then on, Figures.HealthyOKP99Ms and
// RequestsSent) and -sample-connected P -sample-clusters (the gray
// clusters; Availability.NotConnected and, for a strategy with a breaker,
// BreakerOpen), with role gray for its gray clusters.
package protocol
