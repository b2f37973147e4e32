package restmapper

import (
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// clientGoAccept is the Accept header of client-go v0.36.3's discovery
// client (AcceptV2, AcceptV2Beta1, AcceptV1).
const clientGoAccept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList," +
	"application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"

// TestDiscoveryOneDownloadPerPath: a first read downloads each path once,
// with no ETags to send and with ETags of another cluster's discovery (the
// Table's last read): its /apis differs (200), its /api does not (304,
// then read in full, as the Table has no mapping for the pair).
func TestDiscoveryOneDownloadPerPath(t *testing.T) {
	tb := NewTable()
	for i, gadgets := range []bool{false, true} {
		s := newFakeServer(t, v2, gadgets)
		wantScope(t, s.mapper(tb), configMapKind, meta.RESTScopeNameNamespace)
		s.wantAnswers(t, "a first read", [2]int{1, 1}, [2]int{i, 0})
		s.with(func() {
			if s.accept != clientGoAccept {
				t.Fatalf("Accept %q, want client-go's %q", s.accept, clientGoAccept)
			}
		})
	}
}

// TestDiscoverySharesWithoutDownload: a second cluster serving the same
// discovery gets 304s and the first one's mapping.
func TestDiscoverySharesWithoutDownload(t *testing.T) {
	s := newFakeServer(t, v2, false)
	tb := NewTable()
	a, b := s.mapper(tb), s.mapper(tb)
	wantScope(t, a, configMapKind, meta.RESTScopeNameNamespace)
	wantScope(t, b, nodeKind, meta.RESTScopeNameRoot)
	s.wantAnswers(t, "two clusters", [2]int{1, 1}, [2]int{1, 1})
	if a.Current() != b.Current() || a.Current() == nil {
		t.Fatal("two clusters serving one discovery do not share a mapping")
	}
}

// TestDiscoveryChangedDocument: a lookup finding no match reads /apis
// again (changed: 200) and /api (304) with the cluster's own ETags; the
// Table has no mapping for that pair, so /api is read again in full. The
// new mapping maps the new kind, and a second cluster then gets it with
// two 304s.
func TestDiscoveryChangedDocument(t *testing.T) {
	s := newFakeServer(t, v2, false)
	tb := NewTable()
	a := s.mapper(tb)
	wantScope(t, a, configMapKind, meta.RESTScopeNameNamespace)
	old := a.Current()
	if _, err := a.RESTMapping(gadgetKind); !meta.IsNoMatchError(err) {
		t.Fatalf("Gadget before its CRD: %v, want a no-match error", err)
	}
	s.wantAnswers(t, "a no-match, unchanged", [2]int{1, 1}, [2]int{1, 1})
	if a.Current() != old {
		t.Fatal("an unchanged discovery (two 304s) gave a new mapping")
	}

	s.setGadgets(true)
	wantScope(t, a, gadgetKind, meta.RESTScopeNameRoot)
	s.wantAnswers(t, "a no-match, /apis changed", [2]int{2, 2}, [2]int{2, 1})
	if a.Current() == old {
		t.Fatal("a changed discovery kept the old mapping")
	}
	b := s.mapper(tb)
	wantScope(t, b, gadgetKind, meta.RESTScopeNameRoot)
	s.wantAnswers(t, "a second cluster", [2]int{2, 2}, [2]int{3, 2})
	if b.Current() != a.Current() {
		t.Fatal("the second cluster does not share the new mapping")
	}
}

// TestDiscoveryKnownPairNotReread: a 304 on /api and a 200 on /apis whose
// ETags the Table knows give that mapping without reading /api again.
func TestDiscoveryKnownPairNotReread(t *testing.T) {
	older, newer := newFakeServer(t, v2, false), newFakeServer(t, v2, true)
	tb := NewTable()
	a := older.mapper(tb)
	wantScope(t, a, configMapKind, meta.RESTScopeNameNamespace)
	wantScope(t, newer.mapper(tb), gadgetKind, meta.RESTScopeNameRoot) // the Table's last read
	newer.wantAnswers(t, "the newer cluster", [2]int{1, 1}, [2]int{1, 0})
	c := older.mapper(tb)
	wantScope(t, c, configMapKind, meta.RESTScopeNameNamespace)
	older.wantAnswers(t, "a second older cluster", [2]int{1, 2}, [2]int{1, 0})
	if c.Current() != a.Current() {
		t.Fatal("two clusters serving one discovery do not share a mapping")
	}
}

// TestDiscoveryRereadSendsOwnETags: a lookup finding no match sends the
// ETags of the cluster's own discovery, not the Table's last (another
// cluster's): unchanged, nothing is downloaded.
func TestDiscoveryRereadSendsOwnETags(t *testing.T) {
	older, newer := newFakeServer(t, v2, false), newFakeServer(t, v2, true)
	tb := NewTable()
	a := older.mapper(tb)
	wantScope(t, a, configMapKind, meta.RESTScopeNameNamespace)
	wantScope(t, newer.mapper(tb), gadgetKind, meta.RESTScopeNameRoot) // the Table's last read
	if _, err := a.RESTMapping(gadgetKind); !meta.IsNoMatchError(err) {
		t.Fatalf("Gadget on the older cluster: %v, want a no-match error", err)
	}
	older.wantAnswers(t, "a no-match", [2]int{1, 1}, [2]int{1, 1})
}

// TestDiscoveryFreedMappingReread: two 304s whose mapping was freed read
// both paths again, in full.
func TestDiscoveryFreedMappingReread(t *testing.T) {
	s := newFakeServer(t, v2, false)
	tb := NewTable()
	readOnce(t, s, tb)
	for tb.Len() > 0 || tagEntries(tb) > 0 {
		runtime.GC()
		runtime.Gosched()
	}
	b := s.mapper(tb)
	wantScope(t, b, configMapKind, meta.RESTScopeNameNamespace)
	s.wantAnswers(t, "after the mapping was freed", [2]int{2, 2}, [2]int{1, 1})
	if tb.Len() != 1 || tagEntries(tb) != 1 {
		t.Fatalf("%d mappings by digest and %d by ETags, want 1 and 1", tb.Len(), tagEntries(tb))
	}
}

// readOnce maps ConfigMap with a new Mapper of s's cluster, which is
// unreachable once it returns.
func readOnce(t *testing.T, s *fakeServer, tb *Table) {
	t.Helper()
	wantScope(t, s.mapper(tb), configMapKind, meta.RESTScopeNameNamespace)
}

// TestDiscoveryWithoutETags: a server sending no ETags is read in full by
// every cluster; the clusters still share the mapping (by digest).
func TestDiscoveryWithoutETags(t *testing.T) {
	s := newFakeServer(t, v2, false)
	s.with(func() { s.noETags = true })
	tb := NewTable()
	a, b := s.mapper(tb), s.mapper(tb)
	wantScope(t, a, configMapKind, meta.RESTScopeNameNamespace)
	wantScope(t, b, configMapKind, meta.RESTScopeNameNamespace)
	s.wantAnswers(t, "two clusters", [2]int{2, 2}, [2]int{})
	if a.Current() != b.Current() || tagEntries(tb) != 0 {
		t.Fatalf("shared: %t, %d mappings by ETags; want shared, none", a.Current() == b.Current(), tagEntries(tb))
	}
}

// TestDiscoveryV2Beta1: a server serving aggregated discovery v2beta1 only
// gets a shared mapping.
func TestDiscoveryV2Beta1(t *testing.T) {
	s := newFakeServer(t, v2beta1, true)
	tb := NewTable()
	m := s.mapper(tb)
	wantScope(t, m, configMapKind, meta.RESTScopeNameNamespace)
	wantScope(t, m, nodeKind, meta.RESTScopeNameRoot)
	wantScope(t, m, deploymentKind, meta.RESTScopeNameNamespace)
	wantScope(t, m, gadgetKind, meta.RESTScopeNameRoot)
	if m.Current().Dynamic || tb.Len() != 1 {
		t.Fatalf("dynamic: %t, %d shared mappings; want a shared one", m.Current().Dynamic, tb.Len())
	}
}

// TestDiscoveryWithoutAggregated: a server answering the legacy documents
// gets a dynamic RESTMapper of its own, which maps.
func TestDiscoveryWithoutAggregated(t *testing.T) {
	s := newFakeServer(t, legacy, true)
	tb := NewTable()
	m := s.mapper(tb)
	wantScope(t, m, configMapKind, meta.RESTScopeNameNamespace)
	wantScope(t, m, gadgetKind, meta.RESTScopeNameRoot)
	if !m.Current().Dynamic || tb.Len() != 0 || tagEntries(tb) != 0 {
		t.Fatalf("dynamic: %t, %d shared mappings; want a dynamic one, none shared", m.Current().Dynamic, tb.Len())
	}
}

// TestDiscoveryAggregatedAPIServer404: a 404 of /api is tolerated, as
// client-go does (an aggregated apiserver serves /apis only).
func TestDiscoveryAggregatedAPIServer404(t *testing.T) {
	s := newFakeServer(t, v2, true)
	s.with(func() { delete(s.docs, "/api") })
	m := s.mapper(NewTable())
	wantScope(t, m, gadgetKind, meta.RESTScopeNameRoot)
	if _, err := m.RESTMapping(configMapKind); !meta.IsNoMatchError(err) {
		t.Fatalf("ConfigMap without /api: %v, want a no-match error", err)
	}
}

// TestDiscoveryErrors: an error answer fails the lookup with an error
// naming the path and status, the apiserver's Status when it sent one.
func TestDiscoveryErrors(t *testing.T) {
	forbidden := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden, Message: `forbidden: User "u" cannot get path "/api"`}
	for _, c := range []struct {
		name   string
		fail   func(w http.ResponseWriter)
		is     func(error) bool
		status string
	}{
		{"500 text", func(w http.ResponseWriter) { http.Error(w, "boom", http.StatusInternalServerError) },
			apierrors.IsInternalError, "HTTP 500"},
		{"403 Status", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			json.NewEncoder(w).Encode(forbidden)
		}, apierrors.IsForbidden, "HTTP 403"},
		{"406", func(w http.ResponseWriter) { w.WriteHeader(http.StatusNotAcceptable) },
			func(err error) bool { return apierrors.ReasonForError(err) == metav1.StatusReasonNotAcceptable }, "HTTP 406"},
	} {
		s := newFakeServer(t, v2, false)
		s.with(func() { s.fail = c.fail })
		_, err := s.mapper(NewTable()).RESTMapping(configMapKind)
		if err == nil || !c.is(err) {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, want := range []string{"failed to get server groups", "GET " + prefix + "/api", c.status} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not say %q", c.name, err, want)
			}
		}
		if strings.Contains(err.Error(), s.Listener.Addr().String()) {
			t.Errorf("%s: %q names the server", c.name, err)
		}
	}
}
