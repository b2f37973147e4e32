package restmapper

import (
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cgrestmapper "k8s.io/client-go/restmapper"
)

// testDiscovery is a small discovery as GroupsAndMaybeResources returns it:
// the core group and apps with two versions, subresources and the fields a
// RESTMapper does not read.
func testDiscovery() (*metav1.APIGroupList, map[schema.GroupVersion]*metav1.APIResourceList) {
	groups := &metav1.APIGroupList{Groups: []metav1.APIGroup{
		{Name: "", Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "v1", Version: "v1"}},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "v1", Version: "v1"}},
		{Name: "apps", Versions: []metav1.GroupVersionForDiscovery{
			{GroupVersion: "apps/v1", Version: "v1"}, {GroupVersion: "apps/v1beta1", Version: "v1beta1"}},
			PreferredVersion:           metav1.GroupVersionForDiscovery{GroupVersion: "apps/v1", Version: "v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: "10.0.0.1:6443"}}},
	}}
	resources := map[schema.GroupVersion]*metav1.APIResourceList{
		{Version: "v1"}: {GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap", Verbs: []string{"get", "list"}, ShortNames: []string{"cm"}},
			{Name: "nodes", SingularName: "node", Kind: "Node", Verbs: []string{"get"}},
			{Name: "nodes/status", Kind: "Node", Verbs: []string{"get", "patch"}},
		}},
		{Group: "apps", Version: "v1"}: {GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", SingularName: "deployment", Namespaced: true, Kind: "Deployment", Categories: []string{"all"}, StorageVersionHash: "abc"},
			{Name: "deployments/scale", Group: "autoscaling", Version: "v1", Namespaced: true, Kind: "Scale"},
		}},
		{Group: "apps", Version: "v1beta1"}: {GroupVersion: "apps/v1beta1", APIResources: []metav1.APIResource{
			{Name: "widgets", SingularName: "widget", Namespaced: true, Kind: "Widget"},
		}},
	}
	return groups, resources
}

func testDigest(mutate func(*metav1.APIGroupList, map[schema.GroupVersion]*metav1.APIResourceList)) digest {
	g, r := testDiscovery()
	mutate(g, r)
	return digestOf(mapperInput(g, r))
}

func TestMapperInputDigest(t *testing.T) {
	base := testDigest(func(*metav1.APIGroupList, map[schema.GroupVersion]*metav1.APIResourceList) {})
	core, apps := schema.GroupVersion{Version: "v1"}, schema.GroupVersion{Group: "apps", Version: "v1"}
	same := map[string]func(*metav1.APIGroupList, map[schema.GroupVersion]*metav1.APIResourceList){
		"verbs": func(_ *metav1.APIGroupList, r map[schema.GroupVersion]*metav1.APIResourceList) {
			r[core].APIResources[0].Verbs = nil
		},
		"short names": func(_ *metav1.APIGroupList, r map[schema.GroupVersion]*metav1.APIResourceList) {
			r[core].APIResources[0].ShortNames = nil
		},
		"storage hash": func(_ *metav1.APIGroupList, r map[schema.GroupVersion]*metav1.APIResourceList) {
			r[apps].APIResources[0].StorageVersionHash = "x"
		},
		"subresource": func(_ *metav1.APIGroupList, r map[schema.GroupVersion]*metav1.APIResourceList) {
			r[core].APIResources = r[core].APIResources[:2]
		},
		"server address": func(g *metav1.APIGroupList, _ map[schema.GroupVersion]*metav1.APIResourceList) {
			g.Groups[1].ServerAddressByClientCIDRs = nil
		},
	}
	for name, m := range same {
		if testDigest(m) != base {
			t.Errorf("%s: the digest changed, but the mapping does not", name)
		}
	}
	differ := map[string]func(*metav1.APIGroupList, map[schema.GroupVersion]*metav1.APIResourceList){
		"scope": func(_ *metav1.APIGroupList, r map[schema.GroupVersion]*metav1.APIResourceList) {
			r[core].APIResources[1].Namespaced = true
		},
		"kind": func(_ *metav1.APIGroupList, r map[schema.GroupVersion]*metav1.APIResourceList) {
			r[apps].APIResources[0].Kind = "Deploy"
		},
		"singular": func(_ *metav1.APIGroupList, r map[schema.GroupVersion]*metav1.APIResourceList) {
			r[core].APIResources[0].SingularName = ""
		},
		"name": func(_ *metav1.APIGroupList, r map[schema.GroupVersion]*metav1.APIResourceList) {
			r[core].APIResources[0].Name = "cms"
		},
		"preferred": func(g *metav1.APIGroupList, _ map[schema.GroupVersion]*metav1.APIResourceList) {
			g.Groups[1].PreferredVersion.Version = "v1beta1"
		},
		"version order": func(g *metav1.APIGroupList, _ map[schema.GroupVersion]*metav1.APIResourceList) {
			v := g.Groups[1].Versions
			v[0], v[1] = v[1], v[0]
		},
		"group order": func(g *metav1.APIGroupList, _ map[schema.GroupVersion]*metav1.APIResourceList) {
			g.Groups[0], g.Groups[1] = g.Groups[1], g.Groups[0]
		},
		"version without resources": func(_ *metav1.APIGroupList, r map[schema.GroupVersion]*metav1.APIResourceList) {
			delete(r, schema.GroupVersion{Group: "apps", Version: "v1beta1"})
		},
		"version with no resource": func(_ *metav1.APIGroupList, r map[schema.GroupVersion]*metav1.APIResourceList) {
			r[schema.GroupVersion{Group: "apps", Version: "v1beta1"}].APIResources = nil
		},
		"one more resource": func(_ *metav1.APIGroupList, r map[schema.GroupVersion]*metav1.APIResourceList) {
			r[apps].APIResources = append(r[apps].APIResources, metav1.APIResource{Name: "gadgets", Kind: "Gadget"})
		},
	}
	for name, m := range differ {
		if testDigest(m) == base {
			t.Errorf("%s: the digest is the same, but the mapping differs", name)
		}
	}
}

// TestMapperInputMapsAsDiscovery: the mapping built from mapperInput maps
// every kind and resource as client-go's discovery mapper built from the
// whole discovery does.
func TestMapperInputMapsAsDiscovery(t *testing.T) {
	g, r := testDiscovery()
	full := make([]*cgrestmapper.APIGroupResources, 0, len(g.Groups))
	for _, group := range g.Groups {
		gr := &cgrestmapper.APIGroupResources{Group: group, VersionedResources: map[string][]metav1.APIResource{}}
		for _, v := range group.Versions {
			if list := r[schema.GroupVersion{Group: group.Name, Version: v.Version}]; list != nil {
				gr.VersionedResources[v.Version] = list.APIResources
			}
		}
		full = append(full, gr)
	}
	want := cgrestmapper.NewDiscoveryRESTMapper(full)
	got, _ := NewTable().intern(mapperInput(g, r), etags{})
	for _, gk := range []schema.GroupKind{{Kind: "ConfigMap"}, {Kind: "Node"}, {Group: "apps", Kind: "Deployment"},
		{Group: "apps", Kind: "Widget"}, {Group: "apps", Kind: "Nothing"}} {
		w, werr := want.RESTMapping(gk)
		m, err := got.RESTMapping(gk)
		if (werr == nil) != (err == nil) || (err == nil && (*w != *m)) {
			t.Errorf("RESTMapping(%v) = %+v, %v; discovery's: %+v, %v", gk, m, err, w, werr)
		}
	}
	for _, res := range []string{"configmaps", "cm", "node", "deployments", "widgets", "nothings"} {
		gvr := schema.GroupVersionResource{Resource: res}
		w, werr := want.KindsFor(gvr)
		m, err := got.KindsFor(gvr)
		if (werr == nil) != (err == nil) || len(w) != len(m) {
			t.Errorf("KindsFor(%s) = %v, %v; discovery's: %v, %v", res, m, err, w, werr)
		}
	}
}

func TestMapperTableSharesAndForgets(t *testing.T) {
	tb := NewTable()
	internTwo(t, tb)
	// The mappings are unreachable now; their cleanups run on their own
	// goroutine after a collection.
	for tb.Len() > 0 {
		runtime.GC()
		runtime.Gosched()
	}
}

// internTwo interns two discoveries twice each into tb and checks that
// each has one mapping, of its own.
func internTwo(t *testing.T, tb *Table) {
	t.Helper()
	g, r := testDiscovery()
	a, _ := tb.intern(mapperInput(g, r), etags{})
	b, _ := tb.intern(mapperInput(g, r), etags{})
	if a != b {
		t.Fatal("one discovery, two mappings")
	}
	r[schema.GroupVersion{Version: "v1"}].APIResources[1].Namespaced = true
	c, _ := tb.intern(mapperInput(g, r), etags{})
	if c == a {
		t.Fatal("a node scope differs, one mapping")
	}
	for m, want := range map[*Mapping]meta.RESTScopeName{a: meta.RESTScopeNameRoot, c: meta.RESTScopeNameNamespace} {
		rm, err := m.RESTMapping(schema.GroupKind{Kind: "Node"})
		if err != nil || rm.Scope.Name() != want {
			t.Fatalf("Node maps to %v, %v; want scope %s", rm, err, want)
		}
	}
	if n := tb.Len(); n != 2 {
		t.Fatalf("%d entries, want 2", n)
	}
}
