package mhc

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
)

func TestMHCLayout(t *testing.T) {
	l := mhcLayout(40, 5, 0.2, 0.1, 30*time.Second, 90*time.Second)
	if !reflect.DeepEqual(l, mhcLayout(40, 5, 0.2, 0.1, 30*time.Second, 90*time.Second)) {
		t.Fatal("same seed, different layouts")
	}
	count := map[string]int{}
	for c, role := range l.Roles {
		count[role]++
		events := slices.ContainsFunc(l.Events, func(e fleet.Event) bool { return e.Cluster == c })
		switch role {
		case "dead":
			if l.Initial[c] != faultproxy.Hold || events {
				t.Errorf("dead cluster %d: initial %v, events %v", c, l.Initial[c], events)
			}
		case "flapping":
			if l.Initial[c] != faultproxy.Pass || !events {
				t.Errorf("flapping cluster %d: initial %v, events %v", c, l.Initial[c], events)
			}
		default:
			if l.Initial[c] != faultproxy.Pass || events {
				t.Errorf("healthy cluster %d: initial %v, events %v", c, l.Initial[c], events)
			}
		}
	}
	if want := map[string]int{"dead": 8, "flapping": 4, "healthy": 28}; !reflect.DeepEqual(count, want) {
		t.Fatalf("roles %v, want %v", count, want)
	}
	if !slices.IsSortedFunc(l.Events, func(x, y fleet.Event) int { return int(x.At - y.At) }) {
		t.Fatal("events not sorted")
	}
}

func machineWith(name string, conds ...any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": name}}}
	if conds != nil {
		_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
	}
	return u
}

func TestMachineChecked(t *testing.T) {
	cond := func(typ, status string) any { return map[string]any{"type": typ, "status": status} }
	for _, tc := range []struct {
		m    *unstructured.Unstructured
		want bool
	}{
		{machineWith("a"), false},
		{machineWith("b", cond("Ready", "True")), false},
		{machineWith("c", cond("HealthCheckSucceeded", "False")), false},
		{machineWith("d", cond("Ready", "False"), cond("HealthCheckSucceeded", "True")), true},
	} {
		name, ok := machineChecked(tc.m)
		if name != tc.m.GetName() || ok != tc.want {
			t.Errorf("%s: (%q, %v), want %v", tc.m.GetName(), name, ok, tc.want)
		}
	}
}

func TestMHCHealthy(t *testing.T) {
	mhc := func(expected, healthy int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"clusterName": "c001"},
			"status": map[string]any{"expectedMachines": expected, "currentHealthy": healthy}}}
		return u
	}
	healthy := mhcHealthy(5)
	for _, tc := range []struct {
		u    *unstructured.Unstructured
		want bool
	}{{mhc(5, 5), true}, {mhc(5, 4), false}, {mhc(4, 4), false}, {fleet.MHCObject("c001", "run0"), false}} {
		cluster, ok := healthy(tc.u)
		if cluster != "c001" || ok != tc.want {
			t.Errorf("%v: (%q, %v), want %v", tc.u.Object["status"], cluster, ok, tc.want)
		}
	}
}

// mhcTestReport is two runs: stock checks every healthy Machine, the
// adapter misses one and dials dead clusters less.
func mhcTestReport() Report {
	roles := map[string]string{"c000": "healthy", "c001": "dead", "c002": "flapping"}
	run := func(cache string, checked map[string]float64, deadDials uint64) Result {
		return Result{Cache: cache, Roles: roles, Machines: 2, Checked: checked,
			Healthy: map[string]float64{"c000": 3}, Dials: map[string]uint64{"dead": deadDials, "healthy": 1},
			Figures: protocol.MHCFigures{ReconcileErrors: 4, ErrorKinds: map[string]int{"ErrClusterNotConnected": 4},
				ErrorsByMHC: map[string]int{"c001-run0": 3, "c002-run0": 1},
				Reconciles:  map[string]int{"success": 7}, RSSBytes: 64 << 20, Goroutines: 100}}
	}
	return Report{Clusters: 3, APIServers: 1, Dead: 0.2, Flapping: 0.1, Results: []Result{
		run("stock", map[string]float64{"c000-machine-0": 1, "c000-machine-1": 2, "c002-machine-0": 5}, 4),
		run("adapter", map[string]float64{"c000-machine-0": 1}, 2),
	}}
}

func TestMHCRows(t *testing.T) {
	rows := Rows(mhcTestReport().Results)
	byName := map[string][]float64{}
	for _, r := range rows {
		byName[r.Name] = r.Values
	}
	all := byName["every healthy cluster's Machines checked (HealthCheckSucceeded=True), s"]
	if all[0] != 2 || !math.IsNaN(all[1]) {
		t.Errorf("all checked = %v, want [2 NaN]", all)
	}
	if got := byName["flapping clusters' Machines checked in the run"]; !slices.Equal(got, []float64{1, 0}) {
		t.Errorf("flapping checked = %v", got)
	}
	if got := byName["… of them on dead clusters"]; !slices.Equal(got, []float64{3, 3}) {
		t.Errorf("errors on dead clusters = %v", got)
	}
	if got := byName["… of them on flapping clusters"]; !slices.Equal(got, []float64{1, 1}) {
		t.Errorf("errors on flapping clusters = %v", got)
	}
	if got := byName["dials to dead clusters"]; !slices.Equal(got, []float64{4, 2}) {
		t.Errorf("dead dials = %v", got)
	}
}

func TestWriteMHC(t *testing.T) {
	var b strings.Builder
	if err := writeMHC(&b, mhcTestReport()); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{
		"| every healthy cluster's Machines checked (HealthCheckSucceeded=True), s | 2.0 | not all |",
		"- 4 × `ErrClusterNotConnected`",
		"- every healthy cluster's Machines checked (HealthCheckSucceeded=True), s: not all vs 2.0",
		"- reconcile errors logged (MachineHealthCheck): 4 vs 4",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "- dials to dead clusters") {
		t.Errorf("the adapter is ahead on dead dials, but the report says it is not:\n%s", s)
	}
}

func TestRunLabelAndMeans(t *testing.T) {
	results := []Result{{Cache: "stock"}, {Cache: "adapter"}, {Cache: "adapter"}, {Cache: "stock"}}
	if got := runLabel(results, 2); got != "adapter ClusterCache #2" {
		t.Errorf("label %q", got)
	}
	rows := []Row{{Name: "x", Values: []float64{1, 2, 4, 3}}}
	means := MeanByCache(rows, results, "stock", "adapter")
	if !slices.Equal(means[0].Values, []float64{2, 3}) {
		t.Errorf("means %v, want [2 3]", means[0].Values)
	}
	if MeanByCache(rows, results[:1], "stock", "adapter") != nil {
		t.Error("means without an adapter run")
	}
}

func TestLoadV1beta2CRD(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crd.yaml")
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: machines.cluster.x-k8s.io}
spec:
  versions:
  - {name: v1beta1, served: true, storage: false}
  - {name: v1beta2, served: true, storage: true}
`
	if err := os.WriteFile(path, []byte(crd), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := fleet.LoadV1beta2CRD(path)
	if err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(got.Object, "spec", "versions")
	if len(versions) != 1 || versions[0].(map[string]any)["name"] != "v1beta2" {
		t.Fatalf("versions %v, want v1beta2 only", versions)
	}
}

// TestMHCObjectsOnRealAPIServers creates the -mhc run's objects on a real
// fleet (2 Clusters, 1 workload apiserver, Cluster API's CRDs), plays the
// reconciler's part (a Machine's condition and a MachineHealthCheck's
// status) and checks that the watch records both, and that the next
// run's reset clears them.
func TestMHCObjectsOnRealAPIServers(t *testing.T) {
	ctx := t.Context()
	root, err := fleet.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	capiDir, err := fleet.ModuleDir(ctx, fleet.CAPIModule)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Start(ctx, root, 2, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	if err := fleet.MHCObjects(ctx, f, capiDir, 2); err != nil {
		t.Fatal(err)
	}
	if err := fleet.ResetChecks(ctx, f, "run0"); err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(f.Envs[0].Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checked := map[string]any{"conditions": []any{map[string]any{"type": "HealthCheckSucceeded", "status": "True",
		"reason": "Succeeded", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}}}
	setStatus(t, c, fleet.MachineGVK, "c000-machine-0", checked) // seen by the list
	notify := make(chan string, 8)
	w := startCheckWatch(ctx, c, time.Now(), 2, notify)
	if got := <-notify; got != "c000-machine-0" {
		t.Fatalf("first seen %q, want c000-machine-0", got)
	}
	setStatus(t, c, fleet.MachineGVK, "c001-machine-1", checked) // seen by the watch
	setStatus(t, c, fleet.MHCGVK, "c001-run0", map[string]any{"expectedMachines": int64(2), "currentHealthy": int64(2)})
	got := []string{<-notify, <-notify}
	times, err := w.stop()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"c001", "c001-machine-1"}) || len(times.Machines) != 2 || len(times.MHCs) != 1 {
		t.Fatalf("seen %v, times %+v", got, times)
	}
	if err := fleet.ResetChecks(ctx, f, "run1"); err != nil {
		t.Fatal(err)
	}
	checkReset(t, c, "run1", "c001-machine-1", "c001-node-1")
}

// setStatus sets fields of the status of the fleet's object name.
func setStatus(t *testing.T, c client.Client, gvk schema.GroupVersionKind, name string, status map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: fleet.Namespace, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	for k, v := range status {
		if err := unstructured.SetNestedField(u.Object, v, "status", k); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Status().Update(t.Context(), u); err != nil {
		t.Fatal(err)
	}
}

// checkReset checks that only run's MachineHealthChecks are left and that
// machine is no longer checked but keeps its reference to node.
func checkReset(t *testing.T, c client.Client, run, machine, node string) {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(fleet.MHCGVK.GroupVersion().WithKind("MachineHealthCheckList"))
	if err := c.List(t.Context(), list, client.InNamespace(fleet.Namespace)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range list.Items {
		if m.GetDeletionTimestamp() == nil {
			names = append(names, m.GetName())
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"c000-" + run, "c001-" + run}) {
		t.Fatalf("MachineHealthChecks after reset: %v", names)
	}
	m := &unstructured.Unstructured{}
	m.SetGroupVersionKind(fleet.MachineGVK)
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: fleet.Namespace, Name: machine}, m); err != nil {
		t.Fatal(err)
	}
	if _, ok := machineChecked(m); ok {
		t.Fatal("reset left the Machine checked")
	}
	if ref, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name"); ref != node {
		t.Fatalf("reset dropped the nodeRef: %q", ref)
	}
}
