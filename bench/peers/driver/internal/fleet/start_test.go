package fleet

import (
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// TestStartEnvTriesAgainWithANewEnvironment: a start that fails is
// stopped and tried again with a new environment, startTries times, and
// every try's error is returned.
func TestStartEnvTriesAgainWithANewEnvironment(t *testing.T) {
	// An existing cluster whose kubeconfig is missing: Start fails at once,
	// and starts no process (a missing binary would: envtest then leaves
	// its pollers running until their timeout).
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	var made []*envtest.Environment
	env, cfg, err := startEnv(func() *envtest.Environment {
		e := &envtest.Environment{UseExistingCluster: new(true)}
		made = append(made, e)
		return e
	})
	if err == nil || env != nil || cfg != nil {
		t.Fatalf("startEnv with no binaries = %v, %v, %v; want an error only", env, cfg, err)
	}
	if len(made) != startTries {
		t.Fatalf("made %d environments, want %d", len(made), startTries)
	}
	if made[0] == made[1] {
		t.Fatal("a try reused the environment of the try before")
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != startTries {
		t.Fatalf("error has %d lines, want one per try (%d): %v", n, startTries, err)
	}
}
