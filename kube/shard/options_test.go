package shard

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func noKeys(context.Context) ([]client.ObjectKey, error) { return nil, nil }

func TestInvalidOptionsNameTheField(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	for _, tc := range []struct {
		field string
		opts  Options
	}{
		{"Group", Options{Group: "not a label!", Identity: "r", Clusters: noKeys}},
		{"Identity", Options{Identity: "Upper_Case", Clusters: noKeys}},
		{"Namespace", Options{Identity: "r", Namespace: "a/b", Clusters: noKeys}},
		{"LeaseDuration", Options{Identity: "r", LeaseDuration: 1500 * time.Millisecond, Clusters: noKeys}},
		{"LeaseDuration", Options{Identity: "r", LeaseDuration: -time.Second, Clusters: noKeys}},
		{"RenewDeadline", Options{Identity: "r", LeaseDuration: 4 * time.Second, RenewDeadline: 4 * time.Second, Clusters: noKeys}},
		{"RenewDeadline", Options{Identity: "r", RenewDeadline: -time.Second, Clusters: noKeys}},
		{"RenewInterval", Options{Identity: "r", RenewDeadline: time.Second, RenewInterval: time.Second, Clusters: noKeys}},
		{"RenewInterval", Options{Identity: "r", RenewInterval: -time.Second, Clusters: noKeys}},
		{"Clusters", Options{Identity: "r"}},
	} {
		_, err := New(c, tc.opts)
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "Options."+tc.field+"=") ||
			!strings.HasPrefix(err.Error(), "shard: ") {
			t.Errorf("%s: %v, want ErrInvalidOptions naming Options.%s", tc.field, err, tc.field)
		}
	}
	if _, err := New(nil, Options{Identity: "r", Clusters: noKeys}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("nil client: %v", err)
	}
}

func TestDefaults(t *testing.T) {
	s, err := New(fake.NewClientBuilder().Build(), Options{Clusters: noKeys})
	if err != nil {
		t.Fatal(err)
	}
	o := s.opts
	if o.Group != DefaultGroup || o.Namespace != DefaultNamespace || o.Identity == "" ||
		o.LeaseDuration != DefaultLeaseDuration || o.RenewDeadline != 10*time.Second || o.RenewInterval != 2500*time.Millisecond {
		t.Fatalf("defaults: %+v", o)
	}
	if s.leases.key.Name != "default-"+o.Identity {
		t.Fatalf("lease name %q", s.leases.key.Name)
	}
}
