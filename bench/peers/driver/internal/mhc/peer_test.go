package mhc

import (
	"flag"
	"reflect"
	"strings"
	"testing"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
)

func TestMHCPeerFlags(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		caches []string
		err    string
	}{
		{[]string{"-mhc"}, []string{"stock", "adapter", "adapter", "stock"}, ""},
		{[]string{"-mhc", "-mhc-peer", "before=/b"}, []string{"stock", "adapter", "before", "before", "adapter", "stock"}, ""},
		{[]string{"-mhc", "-mhc-caches", "before,adapter", "-mhc-peer", "before=/b"}, []string{"before", "adapter"}, ""},
		{[]string{"-mhc", "-mhc-caches", "before,adapter"}, nil, `-mhc-caches: unknown cache "before" (stock, adapter)`},
		{[]string{"-mhc", "-mhc-peer", "stock=/b"}, nil, "-mhc-peer stock: the name of a built-in cache"},
		{[]string{"-mhc", "-mhc-peer", "before"}, nil, "want NAME=BINARY"},
	} {
		o, err := parse(tc.args...)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(o.Caches, tc.caches) {
			t.Errorf("%v: caches %v (%v), want %v", tc.args, o.Caches, err, tc.caches)
		}
	}
	o, err := parse("-mhc", "-mhc-peer", "before=/b")
	if err != nil {
		t.Fatal(err)
	}
	if bin, cache := o.peer("/capi", "before"); bin != "/b" || cache != "adapter" {
		t.Errorf("before runs %s -cache %s, want /b -cache adapter", bin, cache)
	}
	if bin, cache := o.peer("/capi", "stock"); bin != "/capi" || cache != "stock" {
		t.Errorf("stock runs %s -cache %s, want /capi -cache stock", bin, cache)
	}
}

// parse is the driver's command line as far as an -mhc run reads it.
func parse(args ...string) (*Options, error) {
	fs := flag.NewFlagSet("mhc", flag.ContinueOnError)
	o := Register(fs, fleet.Flags(fs))
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return o, o.Defaults()
}
