package protocol

import (
	"flag"
	"time"
)

// PeerFlags are the flags the driver passes every program that connects
// the fleet's clusters — the controller-runtime peers (bench/peers/workload)
// and the client-go floor (bench/peers/floor) — with one meaning for all:
// where the fleet is, which clusters, and a scale run's idle and load
// windows. Each program defines its own flags beside them.
type PeerFlags struct {
	// Kubeconfig is the management cluster's kubeconfig file.
	Kubeconfig string
	// Namespace holds the Clusters, their kubeconfig Secrets and the
	// reconciled objects.
	Namespace string
	// Roles is -roles as given: comma-separated name=role, or @FILE.
	Roles string
	// WorkloadNamespace holds the objects written in workload clusters.
	WorkloadNamespace string
	// Idle: in a scale run, how long the program stays idle once
	// connected (0: no idle window); LoadRate and LoadWindow: then, Gets
	// per second spread over the clusters, for how long (0: none).
	Idle       time.Duration
	LoadRate   float64
	LoadWindow time.Duration
}

// Define defines the flags on fs, into f.
func (f *PeerFlags) Define(fs *flag.FlagSet) {
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "management cluster kubeconfig file")
	fs.StringVar(&f.Namespace, "namespace", "fleet", "namespace of the Clusters, their kubeconfig Secrets and the reconciled objects")
	fs.StringVar(&f.Roles, "roles", "", "comma-separated name=role (healthy, dead, recovering, flapping, gray); @FILE: read from FILE")
	fs.StringVar(&f.WorkloadNamespace, "workload-namespace", "default", "namespace written in workload clusters")
	fs.DurationVar(&f.Idle, "idle", 0, "scale run: stay idle this long once connected (a peer: once every object reconciled), and report the idle figures")
	fs.Float64Var(&f.LoadRate, "load-rate", 0, "scale run: after the idle window, Gets per second spread over the clusters (0: none)")
	fs.DurationVar(&f.LoadWindow, "load-window", 20*time.Second, "scale run: how long -load-rate lasts")
}
