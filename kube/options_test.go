package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/pool"
)

// Every configuration error of a kube constructor matches ErrInvalidOptions
// and names the field; valid zero options are accepted.
func TestConstructorsRejectInvalidOptions(t *testing.T) {
	src := unusedSource
	d, err := NewDialer(src, DialerOptions{})
	if err != nil {
		t.Fatalf("NewDialer with zero options: %v", err)
	}
	p, err := NewPool(d, pool.Options[client.ObjectKey, *Cluster]{})
	if err != nil {
		t.Fatalf("NewPool with zero options: %v", err)
	}
	defer p.Close()
	if _, err := NewProber(p, ProberOptions{}); err != nil {
		t.Fatalf("NewProber with zero options: %v", err)
	}

	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nil source", second(NewDialer(nil, DialerOptions{})),
			"kube: invalid options: NewDialer: ConfigSource must not be nil"},
		{"QPS", second(NewDialer(src, DialerOptions{QPS: -1})),
			"kube: invalid options: DialerOptions.QPS=-1 must not be negative"},
		{"RequestTimeout", second(NewDialer(src, DialerOptions{RequestTimeout: -time.Second})),
			"kube: invalid options: DialerOptions.RequestTimeout=-1s must not be negative"},
		{"Burst", second(NewDialer(src, DialerOptions{Burst: -2})),
			"kube: invalid options: DialerOptions.Burst=-2 must not be negative"},
		{"ReadyzTimeout", second(NewDialer(src, DialerOptions{ReadyzTimeout: -time.Millisecond})),
			"kube: invalid options: DialerOptions.ReadyzTimeout=-1ms must not be negative"},
		{"CacheSyncTimeout", second(NewDialer(src, DialerOptions{CacheSyncTimeout: -time.Minute})),
			"kube: invalid options: DialerOptions.CacheSyncTimeout=-1m0s must not be negative"},
		{"nil pool", second(NewProber(nil, ProberOptions{})),
			"kube: invalid options: NewProber: pool must not be nil"},
		{"Interval", second(NewProber(p, ProberOptions{Interval: -time.Second})),
			"kube: invalid options: ProberOptions.Interval=-1s must not be negative"},
		{"Timeout", second(NewProber(p, ProberOptions{Timeout: -time.Second})),
			"kube: invalid options: ProberOptions.Timeout=-1s must not be negative"},
		{"Concurrency", second(NewProber(p, ProberOptions{Concurrency: -3})),
			"kube: invalid options: ProberOptions.Concurrency=-3 must not be negative"},
		{"nil dialer", second(NewPool(nil, pool.Options[client.ObjectKey, *Cluster]{})),
			"kube: invalid options: NewPool: Dialer must not be nil"},
	} {
		if !errors.Is(tc.err, ErrInvalidOptions) || tc.err.Error() != tc.want {
			t.Errorf("%s: got %v, want %q matching ErrInvalidOptions", tc.name, tc.err, tc.want)
		}
	}

	// The pool's own option errors match both sentinels and keep the field.
	_, err = NewPool(d, pool.Options[client.ObjectKey, *Cluster]{MaxWait: -time.Second})
	if !errors.Is(err, ErrInvalidOptions) || !errors.Is(err, pool.ErrInvalidOptions) {
		t.Fatalf("NewPool with MaxWait=-1s: %v, want ErrInvalidOptions and pool.ErrInvalidOptions", err)
	}
	if got := err.Error(); !containsAll(got, "kube: invalid options", "MaxWait") {
		t.Fatalf("NewPool with MaxWait=-1s: %q does not name the field", got)
	}
}

// unusedSource is a ConfigSource for Dialers that never dial.
var unusedSource = ConfigFunc(func(context.Context, client.ObjectKey) (*rest.Config, error) {
	return nil, errors.New("unused")
})

// second returns the error of a constructor's (value, error) result.
func second[T any](_ T, err error) error { return err }

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
