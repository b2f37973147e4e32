package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The demo on real loopback sockets: healthy clusters serve every worker
// from one dial, the refusing cluster trips its breaker and is then
// rejected without dialing, and the dead one never blocks a worker for the
// dial timeout.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	st, err := run(&out, 2500*time.Millisecond, 4)
	if err != nil {
		t.Fatal(err)
	}
	// A healthy cluster is dialed once and never fails nor is rejected. A
	// wait timeout is not checked: it is a Get that waited the default
	// MaxWait (50 ms) for the first dial, which a loaded machine can make.
	for _, n := range []string{"healthy-1", "healthy-2", "healthy-3"} {
		if s := st[n]; s.ok.Load() == 0 || s.dials.Load() != 1 || s.failed.Load()+s.rejected.Load() != 0 {
			t.Errorf("%s: ok=%d dials=%d failed=%d timeouts=%d rejected=%d", n, s.ok.Load(), s.dials.Load(),
				s.failed.Load(), s.timeout.Load(), s.rejected.Load())
		}
	}
	if s := st["refused"]; s.rejected.Load() == 0 || s.ok.Load() != 0 || s.dials.Load() > 6 {
		t.Errorf("refused: rejected=%d ok=%d dials=%d", s.rejected.Load(), s.ok.Load(), s.dials.Load())
	}
	// 2.5s with a 1s dial timeout: at most 3 dials of the dead cluster, and
	// no Get waited anywhere near the dial timeout (generous bound).
	if s := st["dead"]; s.ok.Load() != 0 || s.dials.Load() > 3 {
		t.Errorf("dead: ok=%d dials=%d", s.ok.Load(), s.dials.Load())
	}
	if !strings.Contains(out.String(), "summary") {
		t.Errorf("no summary table:\n%s", out.String())
	}
}
