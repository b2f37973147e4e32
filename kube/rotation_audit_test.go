package kube

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/clusterpool/clusterpool/internal/envtestutil"
)

// rotationEnv is an apiserver of its own for the rotation test: it accepts
// the bearer tokens of tokenUsers (its token auth file, not reloadable, so
// all of them from the start) and writes an audit log of every request of
// the rotating identities, which the test reads to count LISTs, watches,
// failures and requests left open.
type rotationEnv struct {
	env      *envtest.Environment
	cfg      *rest.Config // admin
	tokens   map[string]string
	auditLog string
}

// startRotationEnv starts the apiserver; users are the audited names.
func startRotationEnv(t *testing.T, tokenUsers, certUsers []string) *rotationEnv {
	t.Helper()
	if _, err := envtestutil.Assets(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	e := &rotationEnv{tokens: map[string]string{}, auditLog: filepath.Join(dir, "audit.log")}
	var csv strings.Builder
	for i, u := range tokenUsers {
		tok := fmt.Sprintf("rotation-token-%d-%d", i, time.Now().UnixNano())
		e.tokens[u] = tok
		fmt.Fprintf(&csv, "%s,%s,uid-%s,\"system:masters\"\n", tok, u, u)
	}
	users := strings.Join(append(append([]string{}, tokenUsers...), certUsers...), ", ")
	policy := "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  users: [" + users + "]\n- level: None\n"
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	e.env = &envtest.Environment{}
	e.env.ControlPlane.GetAPIServer().Configure().
		Append("token-auth-file", write("tokens.csv", csv.String())).
		Append("audit-policy-file", write("audit.yaml", policy)).
		Append("audit-log-path", e.auditLog).
		Append("audit-log-mode", "blocking")
	cfg, err := e.env.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver: %v", err)
	}
	t.Cleanup(func() {
		if err := e.env.Stop(); err != nil {
			t.Errorf("stopping kube-apiserver: %v", err)
		}
	})
	e.cfg = cfg
	return e
}

// auditEvent is an audit log event.
type auditEvent = envtestutil.AuditEvent

// audit reads the audit log.
func (e *rotationEnv) audit(t *testing.T) []auditEvent {
	t.Helper()
	f, err := os.Open(e.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, _, err := envtestutil.ReadAudit(f)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// auditCounts are the requests of the rotating identities received since
// a point in time.
type auditCounts struct {
	lists, initialWatches, watches, failed int
	failures, relists                      []string
}

// countSince counts the completed requests received at or after since:
// LISTs and watches with sendInitialEvents (both are relists: client-go's
// WatchListClient lists through a watch), plain watches (re-watches from a
// resourceVersion), and answers of 400 or more.
func countSince(evs []auditEvent, since time.Time) auditCounts {
	var c auditCounts
	for _, ev := range evs {
		if ev.Stage != "ResponseComplete" || ev.Received.Before(since) {
			continue
		}
		switch {
		case ev.Verb == "list":
			c.lists++
			c.relists = append(c.relists, ev.Received.Format(time.StampMilli)+" "+ev.User.Username+" "+ev.RequestURI)
		case ev.Verb == "watch" && strings.Contains(ev.RequestURI, "sendInitialEvents=true"):
			c.initialWatches++
			c.relists = append(c.relists, ev.Received.Format(time.StampMilli)+" "+ev.User.Username+" "+ev.RequestURI)
		case ev.Verb == "watch":
			c.watches++
		}
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 400 {
			c.failed++
			c.failures = append(c.failures, fmt.Sprintf("%s %s %s: %d", ev.User.Username, ev.Verb, ev.RequestURI, ev.ResponseStatus.Code))
		}
	}
	return c
}

// openRequests lists the requests of users other than except that the
// apiserver received but has not completed: what still runs as them.
func openRequests(evs []auditEvent, except string) []string {
	done := map[string]bool{}
	for _, ev := range evs {
		if ev.Stage == "ResponseComplete" || ev.Stage == "Panic" {
			done[ev.AuditID] = true
		}
	}
	var open []string
	seen := map[string]bool{}
	for _, ev := range evs {
		if ev.User.Username != except && !done[ev.AuditID] && !seen[ev.AuditID] {
			seen[ev.AuditID] = true
			open = append(open, ev.User.Username+" "+ev.Verb+" "+ev.RequestURI)
		}
	}
	return open
}
