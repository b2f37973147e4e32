package incluster

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/goleak"
	"k8s.io/client-go/rest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The in-cluster endpoint is the one rest.InClusterConfig uses.
func TestInClusterServiceEndpoint(t *testing.T) {
	t.Setenv(EnvServiceHost, "fd00::1")
	t.Setenv(EnvServicePort, "443")
	host, ca, err := ServiceEndpoint()
	if err != nil || host != "https://[fd00::1]:443" || ca != CAFile {
		t.Fatalf("endpoint %q %q %v", host, ca, err)
	}
	t.Setenv(EnvServicePort, "")
	if _, _, err := ServiceEndpoint(); !errors.Is(err, rest.ErrNotInCluster) {
		t.Fatalf("without %s: %v, want rest.ErrNotInCluster", EnvServicePort, err)
	}
}

// RunsOn reads the Pod by namespace and name and compares its UID; NotFound
// and Forbidden mean another cluster, any other answer is an error.
func TestRunsOn(t *testing.T) {
	p := &Pod{Namespace: "ns", Name: "controller", UID: "uid-1"}
	for _, tc := range []struct {
		name, body string
		status     int
		want       bool
		fails      bool
	}{
		{"our Pod", `{"metadata":{"uid":"uid-1"}}`, http.StatusOK, true, false},
		{"another UID", `{"metadata":{"uid":"uid-2"}}`, http.StatusOK, false, false},
		{"not found", ``, http.StatusNotFound, false, false},
		{"forbidden", ``, http.StatusForbidden, false, false},
		{"server error", ``, http.StatusInternalServerError, false, true},
		{"not JSON", `<html>`, http.StatusOK, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/v1/namespaces/ns/pods/controller" {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			got, err := p.RunsOn(context.Background(), srv.Client(), srv.URL)
			if got != tc.want || (err != nil) != tc.fails {
				t.Fatalf("RunsOn: %v, %v; want %v, error %v", got, err, tc.want, tc.fails)
			}
		})
	}
}
