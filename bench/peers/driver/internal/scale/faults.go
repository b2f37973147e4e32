package scale

import (
	"context"
	"errors"
	"slices"
	"syscall"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
)

// injected is one sampled cluster's fault: when it was in force.
type injected struct {
	Cluster  string
	Fault    string
	AtUnixMs int64
}

// detection is what a peer reported about one killed cluster.
type detection struct {
	Cluster string `json:"cluster"`
	Fault   string `json:"fault"`
	// FaultUnixMs is when the fault was in force (the apiserver stopped
	// or gone, the proxy black-holing).
	FaultUnixMs int64 `json:"fault_unix_ms"`
	// DetectS: from the fault until the peer first reported the cluster
	// not connected (within its sampling period); -1: not within the
	// bound. Note says why a cluster has no figure.
	DetectS float64 `json:"detect_s"`
	Note    string  `json:"note,omitempty"`
}

// inject puts the sample's faults in force, class by class, and returns
// when each cluster's was.
func (sf *scaleFleet) inject() ([]injected, error) {
	names, classes := sf.sample()
	var out []injected
	var errs []error
	at := map[string]int64{}
	for _, class := range faultClasses {
		var err error
		switch class {
		case faultHang:
			err = sf.hang.Signal(syscall.SIGSTOP)
		case faultKill:
			err = sf.kill.Kill()
		case faultPartition:
			err = sf.setMode(names, classes, faultproxy.Blackhole)
		}
		at[class] = time.Now().UnixMilli()
		errs = append(errs, err)
	}
	for i, name := range names {
		out = append(out, injected{Cluster: name, Fault: classes[i], AtUnixMs: at[classes[i]]})
	}
	return out, errors.Join(errs...)
}

// restore ends the sample's faults: the stopped apiserver continues, the
// killed one starts again (and is ready), the partition heals.
func (sf *scaleFleet) restore(ctx context.Context) error {
	names, classes := sf.sample()
	return errors.Join(sf.hang.Signal(syscall.SIGCONT), sf.kill.Start(ctx), sf.setMode(names, classes, faultproxy.Pass))
}

// setMode switches the proxies of the partitioned clusters of the sample
// (names, classes) to m.
func (sf *scaleFleet) setMode(names, classes []string, m faultproxy.Mode) error {
	var errs []error
	for i := range names {
		if classes[i] == faultPartition {
			r := sf.refs[i]
			errs = append(errs, r.host.setMode(r.i, m))
		}
	}
	return errors.Join(errs...)
}

// detections reads, for each injected fault, when av first reported its
// cluster not connected at or after it.
func detections(faults []injected, av *protocol.Availability) []detection {
	var out []detection
	for _, f := range faults {
		d := detection{Cluster: f.Cluster, Fault: f.Fault, FaultUnixMs: f.AtUnixMs, DetectS: -1}
		switch {
		case av == nil:
			d.Note = "no samples"
		case av.FirstConnectedUnixMs[f.Cluster] == 0:
			d.Note = "not connected before the fault"
		default:
			ivs := av.NotConnected[f.Cluster]
			// The first interval not over before the fault: one open
			// across it counts from the fault.
			if i := slices.IndexFunc(ivs, func(iv [2]int64) bool { return iv[1] >= f.AtUnixMs }); i >= 0 {
				d.DetectS = float64(max(0, ivs[i][0]-f.AtUnixMs)) / 1000
			} else {
				d.Note = "never reported"
			}
		}
		out = append(out, d)
	}
	return out
}
