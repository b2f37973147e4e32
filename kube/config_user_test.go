package kube

import (
	"errors"
	"fmt"
	"testing"
)

// A context whose user is named "" (Cluster API's FromEnvTestConfig writes
// one) keeps that user's credentials, as client-go does; a context naming a
// user that is not in the kubeconfig is refused.
func TestParseKubeconfigUserNamedEmpty(t *testing.T) {
	const kc = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: ""
  user: {token: canary-token}
contexts:
- name: x
  context: {cluster: c, user: %q}
current-context: x
`
	cfg, err := ParseKubeconfig([]byte(sprintfQ(kc, "")))
	if err != nil {
		t.Fatalf("ParseKubeconfig: %v", err)
	}
	if cfg.BearerToken != "canary-token" {
		t.Errorf("the credentials of the user named \"\" were dropped")
	}
	if _, err := ParseKubeconfig([]byte(sprintfQ(kc, "missing"))); !errors.Is(err, ErrInvalidKubeconfig) {
		t.Errorf("a context naming a missing user: %v, want ErrInvalidKubeconfig", err)
	}
}

func sprintfQ(format, user string) string { return fmt.Sprintf(format, user) }
