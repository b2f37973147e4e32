package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// The -replicas mode: two replicas share the five clusters through Leases,
// and when replica-1 stops halfway, replica-0 owns them all and keeps the
// healthy ones reconciled.
func TestDemoReplicas(t *testing.T) {
	var out bytes.Buffer
	res, err := Run(context.Background(), &out, Config{Duration: 24 * time.Second, Flap: 8 * time.Second, Every: 3 * time.Second, Replicas: 2})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	var lines []string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "ownership  ") {
			lines = append(lines, l)
		}
	}
	shared := false
	for _, l := range lines {
		shared = shared || (strings.Contains(l, "replica-0: ") && strings.Contains(l, "replica-1: "))
	}
	if !shared {
		t.Errorf("the two replicas never shared the clusters: %q", lines)
	}
	if len(lines) == 0 || lines[len(lines)-1] != "ownership  replica-0: dead flapping healthy-1 healthy-2 healthy-3" {
		t.Errorf("after replica-1 stopped, replica-0 should own every cluster: %q", lines)
	}
	for _, name := range []string{"healthy-1", "healthy-2", "healthy-3"} {
		if f := res.Figures[name]; f.reconciles == 0 || res.Conditions[name] != "True/Connected" {
			t.Errorf("%s: reconciles %d condition %s", name, f.reconciles, res.Conditions[name])
		}
	}
	if dead := res.Figures["dead"]; dead.reconciles != 0 {
		t.Errorf("dead: %d reconciles", dead.reconciles)
	}
}
