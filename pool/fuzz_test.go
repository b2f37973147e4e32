package pool

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// fieldRE matches the "Field=value" New names in its errors.
var fieldRE = regexp.MustCompile(`(MaxWait|DialTimeout|MaxConcurrentDials|MaxTotalDials|OpenTimeout|MaxOpenTimeout|Jitter)=`)

// New never panics: it returns a pool that works, or an error matching
// ErrInvalidOptions that names the field.
func FuzzOptions(f *testing.F) {
	f.Add(int64(0), int64(0), int64(0), int64(0), uint32(0), int64(0), int64(0), 0.0)
	f.Add(int64(-1), int64(10), int64(2), int64(1), uint32(1), int64(-5), int64(1), 0.5)
	f.Add(int64(time.Second), int64(time.Minute), int64(16), int64(16), uint32(100), int64(time.Hour), int64(time.Minute), 1.0)
	f.Fuzz(func(t *testing.T, maxWait, dialTimeout, perCluster, total int64, failures uint32, open, maxOpen int64, jitter float64) {
		o := Options[string, int]{
			MaxWait: time.Duration(maxWait), DialTimeout: time.Duration(dialTimeout),
			MaxConcurrentDials: perCluster, MaxTotalDials: total,
			Breaker: breaker.Settings{ConsecutiveFailures: failures, OpenTimeout: time.Duration(open),
				MaxOpenTimeout: time.Duration(maxOpen), Jitter: jitter},
		}
		p, err := New(func(context.Context, string) (int, error) { return 1, nil }, o)
		if err != nil {
			if p != nil || !errors.Is(err, ErrInvalidOptions) || !fieldRE.MatchString(err.Error()) {
				t.Fatalf("New(%+v) = %v, %v", o, p, err)
			}
			return
		}
		defer p.Close()
		if p.opts.MaxConcurrentDials > p.opts.MaxTotalDials || p.opts.MaxWait <= 0 || p.opts.DialTimeout <= 0 {
			t.Fatalf("accepted options break an invariant: %+v", p.opts)
		}
	})
}
