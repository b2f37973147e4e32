package main

import (
	"slices"
	"testing"
)

// The command line picks one experiment, files first, and the defaults
// of one experiment reach the shared flags the others read.
func TestParseFlagsPicksTheExperiment(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "peers"},
		{[]string{"-smoke"}, "peers"},
		{[]string{"-model-from", "f.json", "-mhc"}, "peers"},
		{[]string{"-scale-from", "f.json", "-chaos"}, "scale"},
		{[]string{"-mhc", "-chaos"}, "mhc"},
		{[]string{"-mhc-from", "f.json"}, "mhc"},
		{[]string{"-chaos-short", "-before-after", "dir"}, "chaos"},
		{[]string{"-before-after", "dir", "-scale", "10"}, "beforeafter"},
		{[]string{"-scale", "10", "-rotation"}, "scale"},
		{[]string{"-rotation"}, "rotation"},
		{[]string{"-gray", "-gray-for", "30s"}, "peers"},
	} {
		o, err := parseFlags(tc.args)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got, _ := o.experiment(); got != tc.want {
			t.Errorf("%v: runs %s, want %s", tc.args, got, tc.want)
		}
	}
}

func TestParseFlagsDefaults(t *testing.T) {
	o, err := parseFlags([]string{"-smoke"})
	if err != nil {
		t.Fatal(err)
	}
	if c := o.shared.Cfg; c.Clusters != 4 || c.Objects != 3 || o.shared.APIServers != 1 {
		t.Errorf("-smoke: %+v on %d apiservers, want 4 Clusters × 3 objects on 1", c, o.shared.APIServers)
	}
	o, err = parseFlags([]string{"-scale", "10,20", "-peer", "dropin=/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"floor", "clusterpool", "clustercache", "cct", "dropin"}; !slices.Equal(o.shared.Strategies, want) {
		t.Errorf("-scale -peer: strategies %v, want %v", o.shared.Strategies, want)
	}
	o, err = parseFlags([]string{"-chaos-short"})
	if err != nil {
		t.Fatal(err)
	}
	if o.shared.Cfg.Clusters != 30 || o.shared.APIServers != 3 {
		t.Errorf("-chaos-short: %d Clusters on %d apiservers, want 30 on 3", o.shared.Cfg.Clusters, o.shared.APIServers)
	}
	for _, args := range [][]string{{"-clusters", "0"}, {"-scale", "20,10"}, {"-run", "("}, {"-rotation", "-rotations", "0"}} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
