package kube

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestTransportChainForwards walks WrappedRoundTripper from the informers'
// client down to the *http.Transport for every combination of guard, watch
// decompression and rotation: every layer forwards, and kube's layers come
// in the order transportChain states; the *http.Transport pings idle
// connections.
func TestTransportChainForwards(t *testing.T) {
	for _, guard := range []bool{true, false} {
		for _, gzip := range []bool{true, false} {
			for _, rotate := range []bool{true, false} {
				t.Run(fmt.Sprintf("guard=%t,gzip=%t,rotate=%t", guard, gzip, rotate), func(t *testing.T) {
					layers := chainLayers(t, guard, gzip, rotate)
					want := []string{"*kube.classTransport", "*kube.guardedTransport", "*kube.watchGzip", "*kube.rotator", "*http.Transport"}
					want = slices.DeleteFunc(want, func(l string) bool {
						return (!guard && l == "*kube.guardedTransport") || (!gzip && l == "*kube.watchGzip") || (!rotate && l == "*kube.rotator")
					})
					ours := slices.DeleteFunc(slices.Clone(layers), func(l string) bool {
						return !strings.HasPrefix(l, "*kube.") && l != "*http.Transport"
					})
					if !slices.Equal(ours, want) {
						t.Fatalf("chain %v: kube's layers %v, want %v", layers, ours, want)
					}
				})
			}
		}
	}
}

// chainLayers builds a cluster's chain as Dial does, without dialing, and
// returns its layers' types from the top, failing at one that does not
// forward WrappedRoundTripper.
func chainLayers(t *testing.T, guard, gzip, rotate bool) []string {
	t.Helper()
	src := &rest.Config{Host: "https://127.0.0.1:1", BearerToken: "token", DisableCompression: !gzip}
	d, err := NewDialer(ConfigFunc(func(_ context.Context, _ client.ObjectKey) (*rest.Config, error) { return src, nil }),
		DialerOptions{Requests: RequestOptions{Disable: !guard}, UserAgent: "chain-test"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(src)
	cfg.UserAgent = "chain-test"
	rev := ""
	if rotate {
		rev = "1"
	}
	l, err := d.transportChain(client.ObjectKey{Name: "chain"}, cfg, src, rev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.conns.CloseAll)
	if (l.rot != nil) != rotate || (l.guard != nil) != guard {
		t.Fatalf("links %+v for guard=%t rotate=%t", l, guard, rotate)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var layers []string
	for rt := informerClient(hc).Transport; ; {
		layers = append(layers, fmt.Sprintf("%T", rt))
		if tr, ok := rt.(*http.Transport); ok {
			if tr.HTTP2 == nil || tr.HTTP2.SendPingTimeout != pingEvery {
				t.Fatalf("chain %v: the transport's HTTP2 config %+v sends no PING every %v", layers, tr.HTTP2, pingEvery)
			}
			return layers
		}
		w, ok := rt.(utilnet.RoundTripperWrapper)
		if !ok || len(layers) > 16 {
			t.Fatalf("chain %v: %T does not forward WrappedRoundTripper", layers, rt)
		}
		rt = w.WrappedRoundTripper()
	}
}
