package scale

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/internal/envtestutil"
)

// The fault classes of a scale run's dead-cluster detection.
const (
	faultHang      = "hang"      // the cluster's apiserver SIGSTOPped
	faultPartition = "partition" // the cluster's proxy black-holes it
	faultKill      = "kill"      // the cluster's apiserver process killed
)

// faultClasses are the classes in the order of the sample: clusters
// 0…p-1 hang, p…2p-1 are partitioned, 2p…3p-1 are killed.
var faultClasses = []string{faultHang, faultPartition, faultKill}

// faultNames describe the classes in the report.
var faultNames = map[string]string{
	faultHang:      "apiserver SIGSTOPped (hangs)",
	faultPartition: "black-hole partition (proxy)",
	faultKill:      "apiserver process killed",
}

// scaleFleet is a scale run's fleet: the management apiserver, k workload
// apiservers shared by the fleet, and (with a sample) two small ones of
// their own for the sampled clusters whose apiserver is stopped or killed;
// every Cluster behind its own proxy in a proxy host.
type scaleFleet struct {
	*fleet.Fleet
	k       int // shared workload apiservers: f.Workload[:k]
	perPart int // sampled clusters per fault class
	names   []string
	addrs   []string // each cluster's proxy address
	refs    []proxyRef
	proxies *proxyHosts
	// hang and kill are the sample's own apiservers (f.Workload[k] and
	// [k+1]); nil without a sample.
	hang, kill *fleet.APIServerProc
}

// startScaleFleet starts the apiservers of a scale fleet with k shared
// workload apiservers and perFault sampled clusters per fault class
// (none: no sample).
func startScaleFleet(ctx context.Context, root string, k, perFault int) (_ *scaleFleet, err error) {
	extra := 0
	if perFault > 0 {
		extra = 2
	}
	f, err := fleet.Start(ctx, root, 0, k+extra, 1)
	if err != nil {
		return nil, err
	}
	sf := &scaleFleet{Fleet: f, k: k, perPart: perFault, proxies: &proxyHosts{cap: proxyHostCap()}}
	defer func() {
		if err != nil {
			sf.stop()
		}
	}()
	if extra > 0 {
		if sf.hang, err = fleet.FindAPIServer(f.Workload[k]); err != nil {
			return nil, err
		}
		if sf.kill, err = fleet.FindAPIServer(f.Workload[k+1]); err != nil {
			return nil, err
		}
	}
	return sf, nil
}

// sample returns the sampled clusters' names and fault classes (index i of
// the first 3·perPart clusters: faultClasses[i/perPart]).
func (sf *scaleFleet) sample() (names, classes []string) {
	for i := range min(3*sf.perPart, len(sf.names)) {
		names, classes = append(names, sf.names[i]), append(classes, faultClasses[i/sf.perPart])
	}
	return names, classes
}

// home is cluster i's workload apiserver: the sample's own ones for the
// clusters whose apiserver is stopped or killed, else i mod k.
func (sf *scaleFleet) home(i int) *rest.Config {
	if sf.perPart > 0 && i < 3*sf.perPart {
		switch faultClasses[i/sf.perPart] {
		case faultHang:
			return sf.Workload[sf.k]
		case faultKill:
			return sf.Workload[sf.k+1]
		}
	}
	return sf.Workload[i%sf.k]
}

// scaleGrowWorkers is how many Clusters grow creates at once: the
// management apiserver answers its four requests each in a few ms.
const scaleGrowWorkers = 32

// grow adds Clusters until the fleet has n.
func (sf *scaleFleet) grow(ctx context.Context, n int) error {
	from := len(sf.names)
	if n <= from {
		return nil
	}
	sf.names = append(sf.names, make([]string, n-from)...)
	sf.addrs = append(sf.addrs, make([]string, n-from)...)
	sf.refs = append(sf.refs, make([]proxyRef, n-from)...)
	errs := make([]error, n-from)
	next := make(chan int)
	var wg sync.WaitGroup
	for range scaleGrowWorkers {
		wg.Go(func() {
			for i := range next {
				if err := sf.add(ctx, i); err != nil {
					errs[i-from] = fmt.Errorf("cluster %s: %w", sf.names[i], err)
				}
			}
		})
	}
	for i := from; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// add creates cluster i: its proxy, kubeconfig Secret, Cluster (with the
// status both Cluster API versions wait for) and its one object.
func (sf *scaleFleet) add(ctx context.Context, i int) error {
	name := fmt.Sprintf("c%03d", i)
	sf.names[i] = name
	target := sf.home(i)
	u, err := url.Parse(target.Host)
	if err != nil {
		return fmt.Errorf("workload apiserver address: %w", err)
	}
	ref, addr, err := sf.proxies.add(u.Host)
	if err != nil {
		return err
	}
	sf.refs[i], sf.addrs[i] = ref, addr
	kc, err := envtestutil.Kubeconfig(target, addr, "")
	if err != nil {
		return err
	}
	labels := map[string]string{fleet.ClusterNameLabel: name}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fleet.Namespace, Name: name + "-kubeconfig", Labels: labels},
		Type: "cluster.x-k8s.io/secret", Data: map[string][]byte{"value": kc}}
	if err := sf.Mgmt.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating kubeconfig Secret: %w", err)
	}
	cluster := fleet.ClusterObject(name, addr)
	if err := sf.Mgmt.Create(ctx, cluster); err != nil {
		return fmt.Errorf("creating Cluster: %w", err)
	}
	cluster.Object["status"] = fleet.ClusterStatus()
	if err := sf.Mgmt.Status().Update(ctx, cluster); err != nil {
		return fmt.Errorf("setting Cluster status: %w", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: fleet.Namespace, Name: name + "-0", Labels: labels}}
	if err := sf.Mgmt.Create(ctx, cm); err != nil {
		return fmt.Errorf("creating object: %w", err)
	}
	return nil
}

// accepted returns the connections the proxies of the first n clusters
// have accepted.
func (sf *scaleFleet) accepted(n int) ([]uint64, error) {
	return sf.proxies.accepted(sf.refs[:n])
}

// stop ends the proxy hosts, the processes started again and the fleet.
func (sf *scaleFleet) stop() {
	sf.proxies.close()
	for _, p := range []*fleet.APIServerProc{sf.hang, sf.kill} {
		if p != nil {
			p.Close()
		}
	}
	sf.Fleet.Stop()
}

// fleetRSS is the resident set of the driver's children (apiservers, etcd,
// proxy hosts; no peer runs when it is asked) in bytes.
func fleetRSS() int64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var sum int64
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil || fleet.ParentOf(pid) != os.Getpid() {
			continue
		}
		sum += procRSS(pid)
	}
	return sum
}
