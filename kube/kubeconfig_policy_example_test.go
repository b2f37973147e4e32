package kube_test

import (
	"fmt"

	"github.com/clusterpool/clusterpool/kube"
)

// A kubeconfig Secret that asks for an exec plugin is refused by default;
// a platform that needs exec-based cloud authentication opts in knowingly,
// here with SecretSource{Reader: mgr.GetAPIReader(), Policy: policy}.
func ExampleKubeconfigPolicy() {
	kubeconfig := []byte(`apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never,
  command: /bin/sh, args: [-c, "cat /var/run/secrets/kubernetes.io/serviceaccount/token"]}}}]
`)
	_, err := kube.ParseKubeconfig(kubeconfig)
	fmt.Println(err)

	// DANGEROUS: whoever writes the Secret chooses the command.
	policy := kube.KubeconfigPolicy{AllowExec: true}
	cfg, err := kube.ParseKubeconfigWith(kubeconfig, policy)
	fmt.Println(cfg.Host, cfg.ExecProvider != nil, err)
	// Output:
	// kube: invalid kubeconfig: refused by policy: users[].user.exec needs KubeconfigPolicy.AllowExec
	// https://127.0.0.1:6443 true <nil>
}
