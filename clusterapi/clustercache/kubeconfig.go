package clustercache

import "github.com/clusterpool/clusterpool/kube"

// DefaultKubeconfigPolicy is what SetupWithManager lets a kubeconfig
// Secret use: what Cluster API's ClusterCache connects with, except what
// reaches beyond the workload cluster into the controller's own machine.
//
// Allowed, as in ClusterCache: inline certificates, keys, tokens and basic
// auth, tls-server-name, insecure-skip-tls-verify and http:// servers
// (AllowInsecureTLS), proxy-url (AllowProxy), impersonation
// (AllowImpersonation).
//
// Refused, and this is the one deliberate difference: local files
// (tokenFile, client-certificate, client-key, certificate-authority),
// which would let whoever writes a Secret make the controller send a file
// of its machine, such as its own service-account token, to a server the
// Secret names. Commands (exec, auth-provider) are refused as ClusterCache
// refuses them, and, like files, anywhere in the kubeconfig, not only in
// its current context.
//
// A provider whose kubeconfigs name files opts in with
// SetupWithManagerAndPolicy and AllowFileReferences set; one that wants
// clusterpool's strict default passes the zero kube.KubeconfigPolicy.
func DefaultKubeconfigPolicy() kube.KubeconfigPolicy {
	return kube.KubeconfigPolicy{AllowInsecureTLS: true, AllowProxy: true, AllowImpersonation: true}
}
