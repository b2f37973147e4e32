package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// What the chaos run's Machine reconciler (Cluster API v1.14.2's, in the
// capi peer) needs beyond the MachineHealthCheck's: the CRDs of the
// MachineSets and MachineDeployments it watches and the MachineDrainRules
// it reads when draining, relative to Cluster API's module root, and an
// infrastructure machine per Machine, provisioned, with its Node's
// providerID.
var machineCRDFiles = []string{
	"core/config/crd/bases/cluster.x-k8s.io_machinesets.yaml",
	"core/config/crd/bases/cluster.x-k8s.io_machinedeployments.yaml",
	"core/config/crd/bases/cluster.x-k8s.io_machinedrainrules.yaml",
}

// installMachineCRDs installs machineCRDFiles and infraMachineCRD.
func installMachineCRDs(ctx context.Context, mgmt client.Client, capiDir string) error {
	for _, file := range machineCRDFiles {
		crd, err := fleet.LoadV1beta2CRD(filepath.Join(capiDir, file))
		if err != nil {
			return err
		}
		if err := fleet.InstallCRD(ctx, mgmt, crd); err != nil {
			return err
		}
	}
	return fleet.InstallCRD(ctx, mgmt, infraMachineCRD())
}

// infraMachineCRD is BenchMachine's CRD: every field kept, labelled as
// implementing Cluster API's v1beta2 contract in its version v1beta2 (what
// v1.14.2 reads to pick the version, internal/contract/version.go).
func infraMachineCRD() *unstructured.Unstructured {
	g, k := fleet.InfraMachineGVK.Group, fleet.InfraMachineGVK.Kind
	plural := strings.ToLower(k) + "s"
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + g,
			"labels": map[string]any{"cluster.x-k8s.io/v1beta2": fleet.InfraMachineGVK.Version}},
		"spec": map[string]any{
			"group": g, "scope": "Namespaced",
			"names": map[string]any{"kind": k, "listKind": k + "List", "plural": plural, "singular": strings.ToLower(k)},
			"versions": []any{map[string]any{"name": fleet.InfraMachineGVK.Version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	return crd
}

// infraMachineObject is cluster's j-th Machine's BenchMachine: provisioned
// (status.initialization.provisioned, the v1beta2 contract), with the
// providerID of the Node.
func infraMachineObject(cluster string, j int) *unstructured.Unstructured {
	m := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": fleet.Namespace, "name": fleet.MachineName(cluster, j),
			"labels": map[string]any{fleet.ClusterNameLabel: cluster}},
		"spec":   map[string]any{"providerID": fleet.ProviderID(cluster, j)},
		"status": map[string]any{"initialization": map[string]any{"provisioned": true}},
	}}
	m.SetGroupVersionKind(fleet.InfraMachineGVK)
	return m
}

// createMachines creates cluster name's missing BenchMachines and
// Machines (n of each) on the plane. A Machine has no nodeRef: the
// Machine reconciler sets it from the Node it finds by providerID.
func (p *chaosPlane) createMachines(ctx context.Context, name string, n int) error {
	for j := range n {
		for _, obj := range []*unstructured.Unstructured{infraMachineObject(name, j), fleet.MachineObject(name, j)} {
			if err := retry(ctx, func(ctx context.Context) error { return ignoreExists(p.mgmt.Create(ctx, obj.DeepCopy())) }); err != nil {
				return fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
			}
		}
	}
	return nil
}

// deleteMachines deletes the plane's Machines and BenchMachines named
// machines (a deleted Cluster's). Their Cluster is gone, so the Machine
// reconciler cannot finish a deletion (Cluster API's Cluster controller
// deletes the Machines first; none runs here): the run removes the
// finalizer itself.
func (p *chaosPlane) deleteMachines(ctx context.Context, machines []string) error {
	unfinalize := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	for _, m := range machines {
		machine, infra := namedObject(fleet.MachineGVK, m), namedObject(fleet.InfraMachineGVK, m)
		err := retry(ctx, func(ctx context.Context) error {
			if err := client.IgnoreNotFound(p.mgmt.Delete(ctx, machine)); err != nil {
				return err
			}
			if err := client.IgnoreNotFound(p.mgmt.Patch(ctx, machine, unfinalize)); err != nil {
				return err
			}
			return client.IgnoreNotFound(p.mgmt.Delete(ctx, infra))
		})
		if err != nil {
			return fmt.Errorf("deleting Machine %s: %w", m, err)
		}
	}
	return nil
}

// namedObject is an object of kind gvk named name in the fleet's
// namespace.
func namedObject(gvk schema.GroupVersionKind, name string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(gvk)
	o.SetNamespace(fleet.Namespace)
	o.SetName(name)
	return o
}

// machinesOf names the Machines of clusters.
func (cf *chaosFleet) machinesOf(clusters []string) []string {
	var out []string
	for _, c := range clusters {
		for j := range cf.machines {
			out = append(out, fleet.MachineName(c, j))
		}
	}
	return out
}

// keysOf is what cluster's time back waits for, as the capi peer names
// successful reconciles: its MachineHealthCheck's (under the cluster's
// name, the chaos trace takes chaosMHCSuffix off) and each of its
// Machines' (under the Machine's name).
func (cf *chaosFleet) keysOf(cluster string) []string {
	return append([]string{cluster}, cf.machinesOf([]string{cluster})...)
}

// isMachine reports whether key (a waiting reconcile's) names a Machine
// rather than a Cluster.
func isMachine(key string) bool { return strings.Contains(key, "-machine-") }

// nodeRefCrossings lists the Machines whose status.nodeRef names a Node
// that is not their cluster's (nodeName: "<cluster>-node-<j>"): the
// Machine reconciler set it from a Node another cluster's client read.
func nodeRefCrossings(machines []unstructured.Unstructured, now time.Time) []protocol.Crossing {
	var out []protocol.Crossing
	for i := range machines {
		m := &machines[i]
		cluster := m.GetLabels()[fleet.ClusterNameLabel]
		ref, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
		if ref == "" || strings.HasPrefix(ref, cluster+"-node-") {
			continue
		}
		owner, _, _ := strings.Cut(ref, "-node-")
		out = append(out, protocol.Crossing{Cluster: cluster, Node: ref, NodeCluster: owner, UnixMs: now.UnixMilli()})
	}
	return out
}

// checkNodeRefs lists the plane's Machines and returns their nodeRef
// crossings.
func (p *chaosPlane) checkNodeRefs(ctx context.Context) ([]protocol.Crossing, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(fleet.MachineGVK.GroupVersion().WithKind("MachineList"))
	if err := retry(ctx, func(ctx context.Context) error { return p.mgmt.List(ctx, list, client.InNamespace(fleet.Namespace)) }); err != nil {
		return nil, fmt.Errorf("listing the Machines to check their nodeRefs: %w", err)
	}
	return nodeRefCrossings(list.Items, time.Now()), nil
}
