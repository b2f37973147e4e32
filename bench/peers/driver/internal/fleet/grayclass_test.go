package fleet

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/clusterpool/clusterpool/internal/grayproxy"
)

// LayGray gives round(fraction·m) Clusters each to slow, 40 % errors and
// throttled, one each to 60 % and 20 % errors, the same for a seed, and
// refuses a fleet with no healthy Cluster left.
func TestLayGray(t *testing.T) {
	for _, c := range []struct {
		m        int
		fraction float64
		want     map[GrayClass]int
	}{
		{40, 0.1, map[GrayClass]int{"": 26, GraySlow: 4, GrayErrors40: 4, GrayThrottled: 4, GrayErrors60: 1, GrayErrors20: 1}},
		{10, 0.1, map[GrayClass]int{"": 5, GraySlow: 1, GrayErrors40: 1, GrayThrottled: 1, GrayErrors60: 1, GrayErrors20: 1}},
		{6, 0.01, map[GrayClass]int{"": 1, GraySlow: 1, GrayErrors40: 1, GrayThrottled: 1, GrayErrors60: 1, GrayErrors20: 1}},
	} {
		classes, err := LayGray(c.m, c.fraction, 7)
		if err != nil {
			t.Fatal(err)
		}
		got := map[GrayClass]int{}
		for _, cl := range classes {
			got[cl]++
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("m %d fraction %v: %v, want %v", c.m, c.fraction, got, c.want)
		}
		again, _ := LayGray(c.m, c.fraction, 7)
		if !reflect.DeepEqual(classes, again) {
			t.Errorf("m %d: another layout from the same seed", c.m)
		}
	}
	if _, err := LayGray(5, 0.1, 1); !errors.Is(err, ErrGrayFleetTooSmall) {
		t.Fatalf("5 Clusters: %v, want ErrGrayFleetTooSmall", err)
	}
}

func TestGrayFaultsOf(t *testing.T) {
	g := GrayFaults{SlowFactor: 10, ThrottleRate: 0.5, RetryAfter: time.Second}
	for _, c := range []struct {
		class GrayClass
		want  grayproxy.Fault
	}{
		{"", grayproxy.PassFault()},
		{GraySlow, grayproxy.Fault{Mode: grayproxy.Slow, Factor: 10}},
		{GrayErrors20, grayproxy.Fault{Mode: grayproxy.Errors, Rate: 0.2, Seed: 3}},
		{GrayErrors60, grayproxy.Fault{Mode: grayproxy.Errors, Rate: 0.6, Seed: 3}},
		{GrayThrottled, grayproxy.Fault{Mode: grayproxy.Throttled, Rate: 0.5, RetryAfter: time.Second, Seed: 3}},
	} {
		if got := g.Of(c.class, 3); got != c.want {
			t.Errorf("%q: %+v, want %+v", c.class, got, c.want)
		}
	}
}
