package kube

import "github.com/clusterpool/clusterpool/internal/kubeconfigpolicy"

// KubeconfigPolicy says which dangerous capabilities a kubeconfig read from
// a Secret may use. A kubeconfig Secret is untrusted input: whoever may
// write Secrets in a watched namespace writes it, and the controller that
// parses it runs with its own identity, files and network position (the
// class of Flux's CVE-2022-24817).
//
// The zero value is the safe default and allows nothing beyond inline data:
// an https server, certificate-authority-data, tls-server-name,
// disable-compression, and a token, client-certificate-data with
// client-key-data, or username and password. Each field re-enables exactly
// one capability; every one of them is DANGEROUS with Secrets that someone
// other than the controller's operator can write.
//
// Invariants: the policy is checked against every cluster, user and
// context of the kubeconfig, not only those the current context names
// (dangerous fields are refused anywhere in the file), before any
// client-go code interprets the config; then only the current context's
// cluster and user reach client-go, and the REST config it returns is
// checked again.
type KubeconfigPolicy struct {
	// AllowExec lets users[].user.exec run a credential plugin: a command
	// of the controller's machine, with the controller's environment,
	// named by the Secret. It also allows the cmd-* keys of an
	// auth-provider's config (which additionally needs AllowAuthProvider).
	// DANGEROUS: whoever writes the Secret runs code in the controller.
	AllowExec bool
	// AllowAuthProvider lets users[].user.auth-provider select one of the
	// auth-provider plugins compiled into the program, with the Secret's
	// configuration. DANGEROUS: what a plugin does (call an identity
	// provider named in the Secret, run a command) is up to the plugin.
	AllowAuthProvider bool
	// AllowFileReferences lets the kubeconfig name files of the
	// controller's machine: users[].user.tokenFile, client-certificate and
	// client-key, clusters[].cluster.certificate-authority. DANGEROUS: the
	// Secret can make the controller send its own service-account token,
	// or any file it can read, to the server the Secret names.
	AllowFileReferences bool
	// AllowInsecureTLS allows clusters[].cluster.insecure-skip-tls-verify
	// and plain http:// servers. DANGEROUS: the connection can be
	// intercepted and the credentials in the Secret read on the way.
	AllowInsecureTLS bool
	// AllowProxy allows clusters[].cluster.proxy-url: the controller then
	// connects to a proxy the Secret names (http, https or socks5) instead
	// of the server. DANGEROUS: it reaches addresses of the controller's
	// network through a path the operator did not configure. Without it
	// the process's usual proxy variables apply.
	AllowProxy bool
	// AllowImpersonation allows users[].user.as, as-uid, as-groups and
	// as-user-extra (kubectl's --as flags). DANGEROUS: requests then run as
	// an identity the Secret chooses, as far as its credentials may
	// impersonate.
	AllowImpersonation bool
}

// ErrKubeconfigRefused is matched, along with ErrInvalidKubeconfig, by the
// error of a kubeconfig that uses a capability its KubeconfigPolicy does
// not allow. The error names every refused field and the policy field that
// would allow it, never a value or an entry's name.
var ErrKubeconfigRefused = kubeconfigpolicy.ErrRefused
