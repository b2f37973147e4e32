package idle

import (
	"io"
	"os"
	"testing"
	"testing/synctest"
	"time"
)

// Each line of the driver's answers is one ack; a late one is kept for the
// next wait; at the end every wait returns at once.
func TestAcksAreLinesKeptUntilWaitedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, w := io.Pipe()
		acks := lines(r)
		start := time.Now()
		waitAck(acks, time.Second) // nothing written: times out
		if d := time.Since(start); d != time.Second {
			t.Fatalf("first wait returned after %v, want the 1 s timeout", d)
		}
		go w.Write([]byte("\n")) // the late answer
		synctest.Wait()
		start = time.Now()
		waitAck(acks, time.Hour)
		if d := time.Since(start); d != 0 {
			t.Fatalf("the kept answer took %v", d)
		}
		w.Close()
		waitAck(acks, time.Hour)
		waitAck(acks, time.Hour)
		if d := time.Since(start); d != 0 {
			t.Fatalf("after the end, waits took %v", d)
		}
	})
}

func TestFlagValue(t *testing.T) {
	file := t.TempDir() + "/roles"
	if err := os.WriteFile(file, []byte("a=healthy,b=healthy\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]string{"x=healthy": "x=healthy", "@" + file: "a=healthy,b=healthy"} {
		if got, err := FlagValue(v); err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", v, got, err, want)
		}
	}
	if _, err := FlagValue("@" + file + ".missing"); err == nil {
		t.Error("a missing file: no error")
	}
}
