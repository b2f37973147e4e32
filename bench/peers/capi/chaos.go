package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// chaosSample is one line of -chaos output (bench/peers/protocol).
type chaosSample = protocol.ChaosSample

// runChaos runs the manager until in closes (or ctx ends), writing a
// chaosSample to out every p.Sample and whenever in asks for a full one.
func runChaos(ctx context.Context, p plan, counter *errorCounter, in io.Reader, out io.Writer) error {
	mgr, err := newManager(p)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	pprofAddr, err := servePProf(runCtx, p.PProf)
	if err != nil {
		return err
	}
	k := newChecks(mgr.GetClient(), p.HungAfter)
	k.listedNodes = counter.listedNodes
	cc, err := setupControllers(runCtx, mgr, setupFor(p.Cache), func(cc clustercache.ClusterCache) clustercache.ClusterCache {
		return &checkedCache{ClusterCache: cc, k: k}
	}, true)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	full := make(chan struct{}, 1)
	closed := make(chan struct{})
	go readCommands(in, full, closed)
	s := sampler{p: p, cc: cc, mgmt: mgr.GetClient(), k: k, counter: counter, enc: json.NewEncoder(out), since: time.Now(), pprof: pprofAddr}
	t := time.NewTicker(p.Sample)
	defer t.Stop()
	for {
		var err error
		select {
		case <-t.C:
			err = s.write(runCtx, false)
		case <-full:
			err = s.write(runCtx, true)
		case <-closed:
			return stopManager(cancel, done)
		case err := <-done:
			return fmt.Errorf("manager stopped early: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		}
		if err != nil {
			return err
		}
	}
}

// stopManager cancels the manager and waits for it, 10 s at most.
func stopManager(cancel context.CancelFunc, done <-chan error) error {
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		fmt.Fprintln(os.Stderr, "capi: manager did not stop within 10s")
	}
	return nil
}

// readCommands signals full for each "full" line of in, and closes closed
// when in ends.
func readCommands(in io.Reader, full chan<- struct{}, closed chan<- struct{}) {
	defer close(closed)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "full" {
			select {
			case full <- struct{}{}:
			default:
			}
		}
	}
}

// sampler builds the samples.
type sampler struct {
	p       plan
	cc      clustercache.ClusterCache
	mgmt    client.Reader
	k       *checks
	counter *errorCounter
	enc     *json.Encoder
	since   time.Time
	pprof   string
}

// write writes one sample (full: with the live heap and series).
func (s *sampler) write(ctx context.Context, full bool) error {
	now := time.Now()
	s.k.scan()
	smp := chaosSample{UnixMs: now.UnixMilli(), Full: full, Goroutines: runtime.NumGoroutine(), Reconciled: map[string]int64{}, PProf: s.pprof}
	var list clusterv1.ClusterList
	if err := s.mgmt.List(ctx, &list, client.InNamespace(s.p.Namespace)); err == nil {
		smp.Clusters = len(list.Items)
		for i := range list.Items {
			if _, err := s.cc.GetClient(ctx, client.ObjectKeyFromObject(&list.Items[i])); err == nil {
				smp.Connected = append(smp.Connected, list.Items[i].Name)
			}
		}
	}
	for name, t := range s.counter.successesSince(s.since) {
		smp.Reconciled[name] = t.UnixMilli()
	}
	s.since = now
	smp.Crossed, smp.Hung = s.k.take()
	smp.FDs, smp.TCP = fdsAndTCP()
	var err error
	if smp.Panics, err = counterSum("controller_runtime_reconcile_panics_total"); err != nil {
		return err
	}
	if full {
		smp.HeapBytes = liveHeap()
		if smp.Series, err = seriesPerCluster(s.p.Namespace); err != nil {
			return err
		}
	}
	if err := s.enc.Encode(smp); err != nil {
		return fmt.Errorf("writing a sample: %w", err)
	}
	return nil
}

// liveHeap runs a GC and returns the live heap.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// fdsAndTCP counts the process's open file descriptors and its
// established TCP connections (/proc/self/fd, /proc/self/net/tcp*).
func fdsAndTCP() (fds, tcp int) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1, -1
	}
	inodes := map[string]bool{}
	for _, e := range entries {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	for _, file := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) >= 10 && f[3] == "01" && inodes[f[9]] {
				tcp++
			}
		}
	}
	return len(entries), tcp
}

// counterSum sums a counter of controller-runtime's registry.
func counterSum(name string) (int, error) {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return 0, fmt.Errorf("gathering metrics: %w", err)
	}
	n := 0
	for _, f := range families {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				n += int(m.GetCounter().GetValue())
			}
		}
	}
	return n, nil
}

// seriesPerCluster counts the series of controller-runtime's registry
// per cluster they name: a "cluster" label's value, or a value
// "namespace/name" of any label.
func seriesPerCluster(namespace string) (map[string]int, error) {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return nil, fmt.Errorf("gathering metrics: %w", err)
	}
	out := map[string]int{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cluster" {
					out[l.GetValue()]++
				} else if name, ok := strings.CutPrefix(l.GetValue(), namespace+"/"); ok {
					out[name]++
				}
			}
		}
	}
	return out, nil
}
