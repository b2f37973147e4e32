// Command floor is the physical floor of bench/peers' scale runs: a bare
// client-go program holding, per workload cluster, exactly what every peer
// must hold and nothing else: one REST client on one HTTP/2 connection (one
// http.Client shared by the requests and the informer), and an informer for
// the watched type (Nodes, which ClusterCache's NodeProviderIDIndex
// watches). No controller-runtime, no REST mapper, no discovery, no health
// probe, no management-side cache: the kubeconfig Secrets are read with one
// List and dropped.
//
// It takes the peers' flags (bench/peers/workload.ParsePlan; the ones it
// has no use for are accepted and ignored), connects every cluster of
// -roles (100 at a time, ClusterCache's default concurrency), writes each
// cluster's -objects ConfigMaps once in its workload cluster as the peers'
// reconciler does, then, with -idle, stays idle and measures itself
// (bench/peers/workload/idle), then, with -load-rate, Gets the clusters'
// first ConfigMaps, one cluster after the other, at that rate for
// -load-window, as the peers do (bench/peers/workload/load). It prints the peers' JSON figures
// (the fields it has) on stdout. It has no notion of a connected cluster:
// it takes no part in the dead-cluster detection.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clusterpool/clusterpool/bench/peers/workload/idle"
	"github.com/clusterpool/clusterpool/bench/peers/workload/load"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// connectConcurrency is how many clusters connect at once.
const connectConcurrency = 100

// figures is what the floor prints (bench/peers/protocol; the fields a
// controller-runtime peer has and the floor has not stay zero).
type figures = protocol.Figures

// plan is what the floor reads of the peers' flags.
type plan struct {
	kubeconfig, namespace, workloadNamespace string
	clusters                                 []string
	objects                                  int
	duration, idle                           time.Duration
	loadRate                                 float64
	loadWindow                               time.Duration
}

func main() {
	p, err := parse(os.Args[1:])
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = run(ctx, p)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func parse(args []string) (plan, error) {
	var p plan
	var common protocol.PeerFlags
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	common.Define(fs) // every role is connected
	fs.IntVar(&p.objects, "objects", 1, "ConfigMaps written per cluster")
	fs.DurationVar(&p.duration, "duration", 5*time.Minute, "bound of the connect phase")
	for _, name := range []string{"workers", "work", "bucket"} {
		fs.String(name, "", "ignored (a peer flag)")
	}
	for _, name := range []string{"saturate", "watch-nodes", "timings"} {
		fs.Bool(name, false, "ignored (a peer flag)")
	}
	if err := fs.Parse(args); err != nil {
		return p, err
	}
	p.kubeconfig, p.namespace, p.workloadNamespace = common.Kubeconfig, common.Namespace, common.WorkloadNamespace
	p.idle, p.loadRate, p.loadWindow = common.Idle, common.LoadRate, common.LoadWindow
	roles, err := idle.FlagValue(common.Roles)
	if err != nil {
		return p, err
	}
	for item := range strings.SplitSeq(roles, ",") {
		if name, _, ok := strings.Cut(item, "="); ok && name != "" {
			p.clusters = append(p.clusters, name)
		}
	}
	if p.kubeconfig == "" || len(p.clusters) == 0 || p.objects < 1 {
		return p, fmt.Errorf("-kubeconfig, -roles and a positive -objects are required")
	}
	return p, nil
}

func run(ctx context.Context, p plan) error {
	mcfg, err := clientcmd.BuildConfigFromFlags("", p.kubeconfig)
	if err != nil {
		return fmt.Errorf("management kubeconfig: %w", err)
	}
	start := time.Now()
	kubeconfigs, err := readKubeconfigs(ctx, mcfg, p.namespace)
	if err != nil {
		return err
	}
	f := figures{Strategy: "floor", Version: clientGoVersion, StartUnixMs: start.UnixMilli(), AllReconciled: -1,
		ClusterDoneUnixMs: map[string]int64{}}
	stop := make(chan struct{})
	defer close(stop)
	clients := connectAll(ctx, p, kubeconfigs, stop, &f)
	if f.Errors == 0 {
		f.AllReconciled = time.Since(start).Seconds()
	}
	f.Seconds = time.Since(start).Seconds()
	if p.idle <= 0 {
		f.RSSBytes, f.PeakRSSBytes = idle.RSS()
		return json.NewEncoder(os.Stdout).Encode(f)
	}
	u, err := url.Parse(mcfg.Host)
	if err != nil {
		return fmt.Errorf("management host: %w", err)
	}
	m := idle.Measure(p.idle, idle.CountRequests(u.Host))
	f.IdleRequests, f.Memory = m.Requests, &m.Memory
	f.IdleStartUnixMs, f.IdleEndUnixMs, f.IdleCPUSeconds = m.StartUnixMs, m.EndUnixMs, m.CPUSeconds
	f.RSSBytes, f.PeakRSSBytes, f.HeapBytes, f.Goroutines = m.RSSBytes, m.PeakRSSBytes, m.HeapBytes, m.Goroutines
	if p.loadRate > 0 {
		f.Timings = load.Run(ctx, p.loadRate, p.loadWindow, requestTimeout, loadGet(p, clients)).Dists()
	}
	return json.NewEncoder(os.Stdout).Encode(f)
}

// connectAll connects every cluster of p (connectConcurrency at a time,
// within p.duration), counting each in f, and returns the clientsets of
// the connected ones by name.
func connectAll(ctx context.Context, p plan, kubeconfigs map[string][]byte, stop <-chan struct{}, f *figures) map[string]*kubernetes.Clientset {
	ctx, cancel := context.WithTimeout(ctx, p.duration)
	defer cancel()
	clients := map[string]*kubernetes.Clientset{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, connectConcurrency)
	for _, name := range p.clusters {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			cs, err := connect(ctx, kubeconfigs[name], name, p, stop)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				f.Errors++
				fmt.Fprintf(os.Stderr, "floor: cluster %s: %v\n", name, err)
				return
			}
			clients[name] = cs
			f.Reconciles += p.objects
			f.ClusterDoneUnixMs[name] = time.Now().UnixMilli()
		})
	}
	wg.Wait()
	return clients
}

// loadGet is the load window's call k: Get the first ConfigMap of the
// k-th cluster of p (in name order, in turn), as the peers' load does; a
// cluster that did not connect fails.
func loadGet(p plan, clients map[string]*kubernetes.Clientset) func(context.Context, int) error {
	names := slices.Sorted(slices.Values(p.clusters))
	return func(ctx context.Context, k int) error {
		name := names[k%len(names)]
		cs := clients[name]
		if cs == nil {
			return fmt.Errorf("cluster %s not connected", name)
		}
		_, err := cs.CoreV1().ConfigMaps(p.workloadNamespace).Get(ctx, name+"-0", metav1.GetOptions{})
		return err
	}
}
