package envtestutil

import (
	"strings"
	"testing"
)

// ReadAudit decodes the complete lines and leaves a partial last one (the
// apiserver is still writing it) for the next read.
func TestReadAuditLeavesAPartialLine(t *testing.T) {
	first := `{"auditID":"a","stage":"ResponseComplete","verb":"get","requestURI":"/api","user":{"username":"u"},` +
		`"responseStatus":{"code":401},"requestReceivedTimestamp":"2026-12-05T10:00:00Z"}` + "\n"
	evs, n, err := ReadAudit(strings.NewReader(first + `{"auditID":"b","sta`))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || n != int64(len(first)) {
		t.Fatalf("read %d events in %d bytes, want 1 in %d", len(evs), n, len(first))
	}
	ev := evs[0]
	if ev.AuditID != "a" || ev.User.Username != "u" || ev.ResponseStatus == nil || ev.ResponseStatus.Code != 401 || ev.Received.IsZero() {
		t.Fatalf("decoded %+v", ev)
	}
	if _, _, err := ReadAudit(strings.NewReader("not json\n")); err == nil {
		t.Fatal("a line that is not JSON was read")
	}
}
