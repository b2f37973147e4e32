// Package kubeconfigpolicy parses kubeconfig bytes, untrusted input, into a
// REST config under a Policy of the dangerous capabilities it may use.
// kube.ParseKubeconfigWith and kube.KubeconfigPolicy are its API;
// docs/security.md says what each capability allows and why.
//
// Invariants: the policy is checked against every cluster, user and
// context of the kubeconfig, not only those the current context names,
// before any client-go code interprets the config; then only the current
// context's cluster and user reach client-go, under fixed names, and the
// REST config it returns is checked again. Errors name fields and policy
// options only, never a value or an entry's name.
package kubeconfigpolicy
