package chaos

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
	"github.com/clusterpool/clusterpool/internal/grayproxy"
)

// chainRig is one proxy chain on loopback in front of a TLS server that
// stands for the workload apiserver (it answers 200 "ok" and counts what
// reached it with the chain's token), and a client of the chain's
// kubeconfig.
type chainRig struct {
	fp      *faultproxy.Proxy
	g       *grayproxy.Proxy
	reached atomic.Int64
	client  *http.Client
	url     string
}

func newChainRig(t *testing.T) *chainRig {
	t.Helper()
	rig := &chainRig{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer chain-token" {
			rig.reached.Add(1)
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	target := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	f := &fleet.Fleet{Workload: []*rest.Config{target}}
	var err error
	if rig.fp, rig.g, err = newChain(f, testTrust(t, 1), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rig.fp.Close(); rig.g.Close() })
	kc, err := chainKubeconfig(rig.fp, rig.g, target, "chain-token")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	rig.url = cfg.Host + "/api"
	if rig.client, err = rest.HTTPClientFor(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rig.client.CloseIdleConnections)
	return rig
}

// get sends n requests and returns their statuses (0: a transport error)
// and Retry-After headers.
func (rig *chainRig) get(t *testing.T, n int) (codes []int, retryAfter []string) {
	t.Helper()
	for range n {
		resp, err := rig.client.Get(rig.url)
		if err != nil {
			codes, retryAfter = append(codes, 0), append(retryAfter, "")
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes, retryAfter = append(codes, resp.StatusCode), append(retryAfter, resp.Header.Get("Retry-After"))
	}
	return codes, retryAfter
}

// The chain is transparent while no fault is on (the kubeconfig reaches
// the apiserver through both proxies, its token passed through); each
// gray class's fault does what it says, and only while it is on; a TCP
// fault hits the manager's own connection (a transport error, not an
// HTTP answer of the gray proxy's).
func TestProxyChain(t *testing.T) {
	rig := newChainRig(t)
	rig.pass(t, "no fault")
	rig.set(t, fleet.GraySlow)
	rig.pass(t, "slow")
	if c := rig.g.Counts(grayproxy.Slow); c.Slowed != chainRequests {
		t.Fatalf("slow: %d answers held, want %d", c.Slowed, chainRequests)
	}
	rig.set(t, fleet.GrayErrors60)
	codes, _ := rig.get(t, chainRequests)
	checkCodes(t, "errors-60", codes, func(c int) bool { return c == http.StatusOK || c == 500 || c == 503 })
	if failed, run := failures(codes, http.StatusOK); failed < chainRequests*6/10-2 || failed > chainRequests*6/10+2 || run >= 3 {
		t.Fatalf("errors-60: %d of %d failed, %d in a row (%v)", failed, chainRequests, run, codes)
	}
	rig.set(t, fleet.GrayThrottled)
	codes, ra := rig.get(t, chainRequests)
	checkCodes(t, "throttled", codes, func(c int) bool { return c == http.StatusOK || c == http.StatusTooManyRequests })
	if throttled, _ := failures(codes, http.StatusOK); throttled < chainRequests/2-2 || throttled > chainRequests/2+2 {
		t.Fatalf("throttled: %d of %d answered 429 (%v)", throttled, chainRequests, codes)
	}
	for i, c := range codes {
		if c == http.StatusTooManyRequests && ra[i] != "1" {
			t.Fatalf("throttled: a 429 with Retry-After %q", ra[i])
		}
	}
	rig.set(t, "")
	rig.pass(t, "gray fault undone")

	received := rig.g.Total().Received()
	rig.fp.SetMode(faultproxy.Reset)
	codes, _ = rig.get(t, 3)
	checkCodes(t, "reset", codes, func(c int) bool { return c == 0 })
	if got := rig.g.Total().Received(); got != received {
		t.Fatalf("reset: the gray proxy received %d requests, want none", got-received)
	}
	rig.fp.SetMode(faultproxy.Pass)
	rig.pass(t, "reset undone")
}

// chainRequests is how many requests each step of TestProxyChain sends.
const chainRequests = 20

// set puts the rig's gray proxy in class's fault ("": pass).
func (rig *chainRig) set(t *testing.T, class fleet.GrayClass) {
	t.Helper()
	if err := rig.g.Set(fleet.DefaultGrayFaults.Of(class, 1)); err != nil {
		t.Fatal(err)
	}
}

// pass checks that every request is answered 200 and reaches the
// apiserver with the token.
func (rig *chainRig) pass(t *testing.T, name string) {
	t.Helper()
	before := rig.reached.Load()
	codes, _ := rig.get(t, chainRequests)
	checkCodes(t, name, codes, func(c int) bool { return c == http.StatusOK })
	if got := rig.reached.Load() - before; got != chainRequests {
		t.Fatalf("%s: %d of %d requests reached the apiserver with the token", name, got, chainRequests)
	}
}

// checkCodes fails unless want holds for every code.
func checkCodes(t *testing.T, name string, codes []int, want func(int) bool) {
	t.Helper()
	for i, c := range codes {
		if !want(c) {
			t.Fatalf("%s: request %d answered %d (all: %v)", name, i, c, codes)
		}
	}
}

// failures counts the codes other than ok, and the longest run of them.
func failures(codes []int, ok int) (n, longest int) {
	run := 0
	for _, c := range codes {
		if c == ok {
			run = 0
			continue
		}
		n, run = n+1, run+1
		longest = max(longest, run)
	}
	return n, longest
}
