package kube

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The slow-cluster rule's options are validated with an error matching
// ErrInvalidOptions that names the field.
func TestLimitOptionsValidation(t *testing.T) {
	src := ConfigFunc(func(context.Context, client.ObjectKey) (*rest.Config, error) { return nil, errors.New("unused") })
	for field, o := range map[string]RequestOptions{
		"DialerOptions.Requests.MinLimit=-1":                             {MinLimit: -1},
		"DialerOptions.Requests.MaxLimit=-1":                             {MaxLimit: -1},
		"DialerOptions.Requests.LatencyTolerance=-1":                     {LatencyTolerance: -1},
		"DialerOptions.Requests.LatencyTolerance=0.5":                    {LatencyTolerance: 0.5},
		"DialerOptions.Requests.LatencyTolerance=NaN":                    {LatencyTolerance: math.NaN()},
		"DialerOptions.Requests.LatencyBaseline=-1s":                     {LatencyBaseline: -time.Second},
		"DialerOptions.Requests.MinLimit=9 must not exceed MaxLimit=8":   {MinLimit: 9, MaxLimit: 8},
		"DialerOptions.Requests.MinLimit=65 must not exceed MaxLimit=64": {MinLimit: 65},
		"DialerOptions.Requests.MinLimit=3 must not exceed MaxLimit=2":   {MaxLimit: 2},
	} {
		_, err := NewDialer(src, DialerOptions{Requests: o})
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want ErrInvalidOptions naming the field", field, err)
		}
	}
	for _, o := range []RequestOptions{{MinLimit: 8, MaxLimit: 8}, {LatencyTolerance: 1}, {MaxLimit: 3}, {DisableLimit: true, MinLimit: 5}} {
		if _, err := NewDialer(src, DialerOptions{Requests: o}); err != nil {
			t.Errorf("%+v: %v, want valid", o, err)
		}
	}
}

// A cluster's guard starts at the limit's ceiling, MaxLimit (default
// DefaultMaxLimit); DisableLimit turns the rule off.
func TestLimitOptionsReachTheGuard(t *testing.T) {
	srv := statusServer(t)
	for _, tc := range []struct {
		o    RequestOptions
		want int
	}{
		{RequestOptions{}, DefaultMaxLimit},
		{RequestOptions{MaxLimit: 12}, 12},
		{RequestOptions{DisableLimit: true}, 0},
	} {
		c, _ := dialFake(t, srv, tc.o)
		if got := c.guard.Limit(); got != tc.want {
			t.Errorf("%+v: limit %d, want %d", tc.o, got, tc.want)
		}
	}
}
