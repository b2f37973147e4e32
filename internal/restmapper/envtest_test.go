package restmapper

import (
	"net/http"
	"os"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/clusterpool/clusterpool/internal/envtestsuite"
)

// suite is a real kube-apiserver, started by the first test that needs it.
var suite = envtestsuite.Suite{Name: "restmapper"}

func TestMain(m *testing.M) { os.Exit(suite.Main(m)) }

// statusCounter counts the answers to GETs of /api and /apis by path and
// status code.
type statusCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[string]map[int]int
}

func (c *statusCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err == nil && (req.URL.Path == "/api" || req.URL.Path == "/apis") {
		c.mu.Lock()
		c.n[req.URL.Path][resp.StatusCode]++
		c.mu.Unlock()
	}
	return resp, err
}

func (c *statusCounter) count(path string, code int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[path][code]
}

// TestDiscoveryAgainstAPIServer: against a real kube-apiserver, a second
// cluster's read is two 304s and shares the first one's mapping, which is
// the one client-go's discovery client's answer gives.
func TestDiscoveryAgainstAPIServer(t *testing.T) {
	cfg := rest.CopyConfig(suite.Need(t)[0])
	counter := &statusCounter{n: map[string]map[int]int{"/api": {}, "/apis": {}}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.CloseIdleConnections()
	tb := NewTable()
	a, b := tb.New(cfg, hc), tb.New(cfg, hc)
	wantScope(t, a, configMapKind, meta.RESTScopeNameNamespace)
	wantScope(t, b, nodeKind, meta.RESTScopeNameRoot)
	for _, p := range []string{"/api", "/apis"} {
		if ok, not := counter.count(p, http.StatusOK), counter.count(p, http.StatusNotModified); ok != 1 || not != 1 {
			t.Errorf("GET %s: %d 200s and %d 304s, want 1 and 1", p, ok, not)
		}
	}
	if a.Current() != b.Current() {
		t.Fatal("two clusters of one apiserver do not share a mapping")
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	groups, resources, _, err := dc.GroupsAndMaybeResources()
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := tb.intern(mapperInput(groups, resources), etags{}); want != a.Current() {
		t.Fatal("the mapping differs from the one client-go's discovery gives")
	}
}
