package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CAPIModule is the Cluster API module whose CRDs the -mhc run installs
// (the version bench/peers/capi requires).
const CAPIModule = "sigs.k8s.io/cluster-api@v1.14.2"

// mhcCRDFiles are the CRDs of the -mhc run beyond the Cluster's, relative to
// Cluster API's module root.
var mhcCRDFiles = []string{
	"core/config/crd/bases/cluster.x-k8s.io_machines.yaml",
	"core/config/crd/bases/cluster.x-k8s.io_machinehealthchecks.yaml",
}

// GroupVersionKinds of the objects the -mhc run creates and watches.
var (
	MachineGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Machine"}
	MHCGVK     = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "MachineHealthCheck"}
	ClusterGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}
)

// ModuleDir returns the directory of mod (path@version) in the module
// cache, downloading it if needed (as clusterapi/conformance/run.sh does).
func ModuleDir(ctx context.Context, mod string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", mod)
	cmd.Dir = "/"
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go mod download %s: %w", mod, err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out.Bytes(), &m); err != nil || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s: no directory (%v)", mod, err)
	}
	return m.Dir, nil
}

// LoadV1beta2CRD reads a Cluster API CRD and keeps only its v1beta2
// version: nothing in the run reads v1beta1, and without a conversion
// webhook the two would not convert.
func LoadV1beta2CRD(path string) (*unstructured.Unstructured, error) {
	crd, err := readYAML(path)
	if err != nil {
		return nil, err
	}
	versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, v := range versions {
		if m, ok := v.(map[string]any); ok && m["name"] == "v1beta2" {
			m["storage"], m["served"] = true, true
			return crd, unstructured.SetNestedSlice(crd.Object, []any{m}, "spec", "versions")
		}
	}
	return nil, fmt.Errorf("%s: no v1beta2 version", path)
}

// MHCObjects creates what the MachineHealthCheck reconciler checks, on a
// fleet without objects: the Machine and MachineHealthCheck CRDs, the
// InfrastructureReady condition on every Cluster (the reconciler evaluates
// a Machine only then), and per Cluster `machines` Nodes in its workload
// apiserver and as many Machines (label cluster.x-k8s.io/cluster-name,
// spec.providerID and status.nodeRef naming the Node).
func MHCObjects(ctx context.Context, f *Fleet, capiDir string, machines int) error {
	for _, file := range mhcCRDFiles {
		crd, err := LoadV1beta2CRD(filepath.Join(capiDir, file))
		if err != nil {
			return err
		}
		if err := InstallCRD(ctx, f.Mgmt, crd); err != nil {
			return err
		}
	}
	workload := make([]client.Client, len(f.Workload))
	for i, cfg := range f.Workload {
		c, err := client.New(cfg, client.Options{})
		if err != nil {
			return fmt.Errorf("workload client: %w", err)
		}
		workload[i] = c
	}
	return forEachCluster(f, func(i int, name string) error {
		if err := markInfrastructureReady(ctx, f.Mgmt, name); err != nil {
			return err
		}
		for j := range machines {
			if err := createNode(ctx, workload[i%len(workload)], name, j); err != nil {
				return err
			}
			if err := createMachine(ctx, f.Mgmt, name, j); err != nil {
				return err
			}
		}
		return nil
	})
}

// forEachCluster runs fn for every cluster of f, growWorkers at once.
func forEachCluster(f *Fleet, fn func(i int, name string) error) error {
	errs := make(chan error, len(f.Names))
	sem := make(chan struct{}, GrowWorkers)
	for i, name := range f.Names {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- fn(i, name)
		}()
	}
	var first error
	for range f.Names {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// NodeName names cluster's j-th Node.
func NodeName(cluster string, j int) string { return fmt.Sprintf("%s-node-%d", cluster, j) }

// MachineName names cluster's j-th Machine.
func MachineName(cluster string, j int) string { return fmt.Sprintf("%s-machine-%d", cluster, j) }

// ProviderID is the providerID of cluster's j-th Node and Machine.
func ProviderID(cluster string, j int) string { return fmt.Sprintf("bench:///%s/%d", cluster, j) }

// markInfrastructureReady adds the v1beta2 InfrastructureReady condition
// to the Cluster's status (startFleet sets ControlPlaneInitialized).
func markInfrastructureReady(ctx context.Context, c client.Client, name string) error {
	cluster := &unstructured.Unstructured{}
	cluster.SetGroupVersionKind(ClusterGVK)
	if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, cluster); err != nil {
		return fmt.Errorf("getting Cluster %s: %w", name, err)
	}
	conds, _, _ := unstructured.NestedSlice(cluster.Object, "status", "conditions")
	conds = append(conds, map[string]any{"type": "InfrastructureReady", "status": "True",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "reason": "Ready", "message": ""})
	if err := unstructured.SetNestedSlice(cluster.Object, conds, "status", "conditions"); err != nil {
		return err
	}
	if err := c.Status().Update(ctx, cluster); err != nil {
		return fmt.Errorf("marking Cluster %s infrastructure ready: %w", name, err)
	}
	return nil
}

// createNode creates cluster's j-th Node, Ready.
func createNode(ctx context.Context, c client.Client, cluster string, j int) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName(cluster, j)},
		Spec: corev1.NodeSpec{ProviderID: ProviderID(cluster, j)}}
	if err := c.Create(ctx, node); err != nil {
		return fmt.Errorf("creating Node %s: %w", node.Name, err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.Now(), Reason: "KubeletReady"}}
	if err := c.Status().Update(ctx, node); err != nil {
		return fmt.Errorf("setting Node %s Ready: %w", node.Name, err)
	}
	return nil
}

// MachineObject is cluster's j-th Machine: its Node's providerID, a
// bootstrap data Secret name, its BenchMachine (infraMachineObject) as the
// infrastructure reference.
func MachineObject(cluster string, j int) *unstructured.Unstructured {
	m := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": Namespace, "name": MachineName(cluster, j),
			"labels": map[string]any{ClusterNameLabel: cluster}},
		"spec": map[string]any{
			"clusterName": cluster,
			"bootstrap":   map[string]any{"dataSecretName": cluster + "-bootstrap"},
			"infrastructureRef": map[string]any{"apiGroup": InfraMachineGVK.Group,
				"kind": InfraMachineGVK.Kind, "name": MachineName(cluster, j)},
			"providerID": ProviderID(cluster, j),
		},
	}}
	m.SetGroupVersionKind(MachineGVK)
	return m
}

// createMachine creates cluster's j-th Machine with its Node's reference
// (-mhc: no Machine reconciler sets it).
func createMachine(ctx context.Context, c client.Client, cluster string, j int) error {
	m := MachineObject(cluster, j)
	if err := c.Create(ctx, m); err != nil {
		return fmt.Errorf("creating Machine %s: %w", m.GetName(), err)
	}
	if err := unstructured.SetNestedMap(m.Object, map[string]any{"nodeRef": map[string]any{"name": NodeName(cluster, j)}}, "status"); err != nil {
		return err
	}
	if err := c.Status().Update(ctx, m); err != nil {
		return fmt.Errorf("setting Machine %s nodeRef: %w", m.GetName(), err)
	}
	return nil
}

// ResetChecks prepares a run: it deletes every MachineHealthCheck, clears
// the Machines' conditions (what the previous run set) and creates one
// MachineHealthCheck per Cluster, named for the run, selecting all its
// Machines.
func ResetChecks(ctx context.Context, f *Fleet, run string) error {
	mhc := &unstructured.Unstructured{}
	mhc.SetGroupVersionKind(MHCGVK)
	if err := f.Mgmt.DeleteAllOf(ctx, mhc, client.InNamespace(Namespace)); err != nil {
		return fmt.Errorf("deleting MachineHealthChecks: %w", err)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(MachineGVK.GroupVersion().WithKind("MachineList"))
	if err := f.Mgmt.List(ctx, list, client.InNamespace(Namespace)); err != nil {
		return fmt.Errorf("listing Machines: %w", err)
	}
	for i := range list.Items {
		m := &list.Items[i]
		unstructured.RemoveNestedField(m.Object, "status", "conditions")
		unstructured.RemoveNestedField(m.Object, "status", "deprecated")
		if err := f.Mgmt.Status().Update(ctx, m); err != nil {
			return fmt.Errorf("clearing Machine %s: %w", m.GetName(), err)
		}
	}
	return forEachCluster(f, func(_ int, name string) error {
		return f.Mgmt.Create(ctx, MHCObject(name, run))
	})
}

// MHCObject is cluster's MachineHealthCheck for run: every Machine of the
// Cluster, a Node unhealthy after 5 min not Ready (Cluster API's
// documented example).
func MHCObject(cluster, run string) *unstructured.Unstructured {
	cond := func(status string) map[string]any {
		return map[string]any{"type": "Ready", "status": status, "timeoutSeconds": int64(300)}
	}
	m := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": Namespace, "name": cluster + "-" + run},
		"spec": map[string]any{
			"clusterName": cluster,
			"selector":    map[string]any{"matchLabels": map[string]any{ClusterNameLabel: cluster}},
			"checks":      map[string]any{"unhealthyNodeConditions": []any{cond("Unknown"), cond("False")}},
		},
	}}
	m.SetGroupVersionKind(MHCGVK)
	return m
}

// InfraMachineGVK is the fleet's infrastructure machine kind (a CRD of
// the run's own, infraMachineCRD).
var InfraMachineGVK = schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Kind: "BenchMachine"}
