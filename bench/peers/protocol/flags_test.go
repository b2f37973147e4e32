package protocol

import (
	"flag"
	"testing"
	"time"
)

func TestPeerFlags(t *testing.T) {
	var f PeerFlags
	fs := flag.NewFlagSet("peer", flag.ContinueOnError)
	f.Define(fs)
	if err := fs.Parse([]string{"-kubeconfig", "k", "-roles", "a=healthy", "-idle", "1m", "-load-rate", "5"}); err != nil {
		t.Fatal(err)
	}
	want := PeerFlags{Kubeconfig: "k", Namespace: "fleet", Roles: "a=healthy", WorkloadNamespace: "default",
		Idle: time.Minute, LoadRate: 5, LoadWindow: 20 * time.Second}
	if f != want {
		t.Fatalf("%+v, want %+v", f, want)
	}
}
