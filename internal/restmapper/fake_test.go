package restmapper

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// prefix is the path the fake apiserver is served under, as behind a
// proxy (Rancher's /k8s/clusters/<id>).
const prefix = "/k8s/clusters/c-1"

// format is what a fake apiserver answers discovery with.
type format int

const (
	v2      format = iota // aggregated discovery v2
	v2beta1               // aggregated discovery v2beta1 only
	legacy                // APIVersions and APIGroupList, no resources
)

// fakeServer is an apiserver on 127.0.0.1 serving canned discovery as
// kube-apiserver does (an ETag per document, 304 Not Modified when
// If-None-Match is it), counting its answers per path.
type fakeServer struct {
	*httptest.Server
	format format

	mu      sync.Mutex
	docs    map[string][]byte // by path under prefix
	noETags bool
	fail    func(w http.ResponseWriter) // answers discovery if set
	ok      map[string]int              // 200s by path
	not     map[string]int              // 304s by path
	accept  string                      // the last discovery request's
}

func newFakeServer(t *testing.T, f format, gadgets bool) *fakeServer {
	t.Helper()
	s := &fakeServer{format: f, ok: map[string]int{}, not: map[string]int{}}
	s.setGadgets(gadgets)
	s.Server = httptest.NewServer(s)
	t.Cleanup(s.Close)
	return s
}

// mapper returns a Mapper of the cluster s serves, sharing tb's mappings.
func (s *fakeServer) mapper(tb *Table) *Mapper {
	return tb.New(&rest.Config{Host: s.URL + prefix, Timeout: time.Minute}, s.Client())
}

// setGadgets sets the documents: the core group (configmaps, nodes) and
// apps (deployments), and, if gadgets, the cluster-scoped Gadget of
// gadget.io.
func (s *fakeServer) setGadgets(gadgets bool) {
	core := group("", "v1", res("configmaps", "ConfigMap", true), res("nodes", "Node", false))
	apis := []apidiscoveryv2.APIGroupDiscovery{group("apps", "v1", res("deployments", "Deployment", true))}
	if gadgets {
		apis = append(apis, group("gadget.io", "v1", res("gadgets", "Gadget", false)))
	}
	docs := map[string]any{}
	if s.format == legacy {
		docs["/api"] = metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}
		docs["/apis"] = legacyGroups(apis)
		docs["/api/v1"] = legacyResources(core)
		for _, g := range apis {
			docs["/apis/"+g.Name+"/v1"] = legacyResources(g)
		}
	} else {
		docs["/api"] = aggregatedList(s.format, core)
		docs["/apis"] = aggregatedList(s.format, apis...)
	}
	bodies := map[string][]byte{}
	for p, d := range docs {
		b, err := json.Marshal(d)
		if err != nil {
			panic(err)
		}
		bodies[p] = b
	}
	s.mu.Lock()
	s.docs = bodies
	s.mu.Unlock()
}

func res(name, kind string, namespaced bool) apidiscoveryv2.APIResourceDiscovery {
	scope := apidiscoveryv2.ScopeCluster
	if namespaced {
		scope = apidiscoveryv2.ScopeNamespace
	}
	return apidiscoveryv2.APIResourceDiscovery{Resource: name, SingularResource: strings.ToLower(kind),
		Scope: scope, ResponseKind: &metav1.GroupVersionKind{Kind: kind}, Verbs: []string{"get", "list"},
		Subresources: []apidiscoveryv2.APISubresourceDiscovery{{Subresource: "status",
			ResponseKind: &metav1.GroupVersionKind{Kind: kind}, Verbs: []string{"get"}}}}
}

func group(name, version string, rs ...apidiscoveryv2.APIResourceDiscovery) apidiscoveryv2.APIGroupDiscovery {
	for i := range rs {
		rs[i].ResponseKind.Group, rs[i].ResponseKind.Version = name, version
	}
	return apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: name},
		Versions: []apidiscoveryv2.APIVersionDiscovery{{Version: version, Resources: rs}}}
}

func aggregatedList(f format, gs ...apidiscoveryv2.APIGroupDiscovery) apidiscoveryv2.APIGroupDiscoveryList {
	gv := "apidiscovery.k8s.io/v2"
	if f == v2beta1 {
		gv = "apidiscovery.k8s.io/v2beta1"
	}
	return apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{APIVersion: gv, Kind: "APIGroupDiscoveryList"}, Items: gs}
}

func legacyGroups(gs []apidiscoveryv2.APIGroupDiscovery) metav1.APIGroupList {
	list := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, g := range gs {
		v := metav1.GroupVersionForDiscovery{GroupVersion: g.Name + "/v1", Version: "v1"}
		list.Groups = append(list.Groups, metav1.APIGroup{Name: g.Name, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
	}
	return list
}

func legacyResources(g apidiscoveryv2.APIGroupDiscovery) metav1.APIResourceList {
	gv := schema.GroupVersion{Group: g.Name, Version: "v1"}.String()
	list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
	for _, r := range g.Versions[0].Resources {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: r.Resource, SingularName: r.SingularResource,
			Namespaced: r.Scope == apidiscoveryv2.ScopeNamespace, Kind: r.ResponseKind.Kind, Verbs: r.Verbs})
	}
	return list
}

// with runs f with s's lock held: a change to s, or a read of s.accept.
func (s *fakeServer) with(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// contentType is the Content-Type of s's discovery answers.
func (s *fakeServer) contentType() string {
	switch s.format {
	case v2:
		return "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	case v2beta1:
		return "application/json;g=apidiscovery.k8s.io;as=APIGroupDiscoveryList;v=v2beta1;charset=utf-8"
	}
	return "application/json"
}

func (s *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, _ := strings.CutPrefix(r.URL.Path, prefix)
	body, etag, fail := s.answer(p, r.Header)
	switch {
	case fail != nil:
		fail(w)
	case etag != "" && r.Header.Get("If-None-Match") == etag:
		w.Header().Set("ETag", etag)
		w.WriteHeader(http.StatusNotModified)
	default:
		if etag != "" {
			w.Header().Set("ETag", etag)
		}
		w.Header().Set("Content-Type", s.contentType())
		w.Write(body)
	}
}

// answer returns path p's document and ETag (none if s sends none), or
// how to fail instead, and counts the answer.
func (s *fakeServer) answer(p string, h http.Header) (body []byte, etag string, fail func(http.ResponseWriter)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	body, found := s.docs[p]
	discovery := p == "/api" || p == "/apis"
	if discovery {
		s.accept = h.Get("Accept")
	}
	switch {
	case discovery && s.fail != nil:
		return nil, "", s.fail
	case !found:
		return nil, "", func(w http.ResponseWriter) { http.Error(w, "404 page not found", http.StatusNotFound) }
	case s.format == v2beta1 && !strings.Contains(h.Get("Accept"), "v=v2beta1"):
		return nil, "", func(w http.ResponseWriter) { w.WriteHeader(http.StatusNotAcceptable) }
	}
	if !s.noETags && discovery && s.format != legacy {
		etag = strconv.Quote(fmt.Sprintf("%X", sha512.Sum512(body)))
	}
	if etag != "" && h.Get("If-None-Match") == etag {
		s.not[p]++
	} else {
		s.ok[p]++
	}
	return body, etag, nil
}

// wantAnswers fails the test unless s answered /api and /apis with 200
// ok[0] and ok[1] times and 304 not[0] and not[1] times.
func (s *fakeServer) wantAnswers(t *testing.T, when string, ok, not [2]int) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	got := [2][2]int{{s.ok["/api"], s.ok["/apis"]}, {s.not["/api"], s.not["/apis"]}}
	if got != [2][2]int{ok, not} {
		t.Fatalf("%s: /api and /apis answered 200 %v and 304 %v times, want %v and %v", when, got[0], got[1], ok, not)
	}
}

var (
	configMapKind  = schema.GroupKind{Kind: "ConfigMap"}
	nodeKind       = schema.GroupKind{Kind: "Node"}
	deploymentKind = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	gadgetKind     = schema.GroupKind{Group: "gadget.io", Kind: "Gadget"}
)

// wantScope fails the test unless gk maps to scope on m.
func wantScope(t *testing.T, m meta.RESTMapper, gk schema.GroupKind, scope meta.RESTScopeName) {
	t.Helper()
	rm, err := m.RESTMapping(gk)
	if err != nil {
		t.Fatalf("RESTMapping(%v): %v", gk, err)
	}
	if rm.Scope.Name() != scope {
		t.Fatalf("%v maps to scope %s, want %s", gk, rm.Scope.Name(), scope)
	}
}

// tagEntries is the number of tb's entries by ETags.
func tagEntries(tb *Table) int {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return len(tb.tags)
}
