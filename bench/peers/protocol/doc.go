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
package protocol
