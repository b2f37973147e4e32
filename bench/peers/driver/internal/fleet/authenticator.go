package fleet

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// rotationGroup is the group of every identity the authenticator accepts;
// the audit policy logs its requests.
const rotationGroup = "bench:rotation"

// Identity is who a token authenticates: one cluster's credential of one
// generation, for one peer's run.
type Identity struct {
	Peer, Cluster string
	Gen           int
}

// Username is the identity's name at the apiserver (and in its audit log).
func (id Identity) Username() string {
	return fmt.Sprintf("rotation:%s:%s:%d", id.Peer, id.Cluster, id.Gen)
}

// ParseUsername reverses username; ok is false for any other name.
func ParseUsername(name string) (id Identity, ok bool) {
	parts := strings.Split(name, ":")
	if len(parts) != 4 || parts[0] != "rotation" {
		return Identity{}, false
	}
	if _, err := fmt.Sscan(parts[3], &id.Gen); err != nil {
		return Identity{}, false
	}
	return Identity{Peer: parts[1], Cluster: parts[2], Gen: id.Gen}, true
}

// Authenticator is the workload apiservers' token authenticator: a
// TokenReview webhook (kube-apiserver's
// --authentication-token-webhook-config-file) served on 127.0.0.1. Unlike
// --token-auth-file, which the apiserver reads once at start, it accepts
// and revokes tokens while the apiservers run, so a revoked token gets 401
// (after the apiserver's caches expire: its webhook cache, set to
// webhookCacheTTL, and its token-success cache of 10 s, which no flag
// changes). Each token is a fresh random value.
type Authenticator struct {
	ln  net.Listener
	srv *http.Server

	mu       sync.Mutex
	Valid    map[string]Identity
	Revoked  map[string]Identity
	accepted uint64 // reviews answered authenticated
	refused  uint64 // reviews of revoked or unknown tokens
}

// WebhookCacheTTL is the apiservers' --authentication-token-webhook-cache-ttl.
const WebhookCacheTTL = time.Second

// StartAuthenticator serves the webhook on a free port of 127.0.0.1.
func StartAuthenticator() (*Authenticator, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	a := &Authenticator{ln: ln, Valid: map[string]Identity{}, Revoked: map[string]Identity{}}
	a.srv = &http.Server{Handler: http.HandlerFunc(a.review), ReadHeaderTimeout: 10 * time.Second}
	go a.srv.Serve(ln)
	return a, nil
}

// Close stops serving.
func (a *Authenticator) Close() { a.srv.Close() }

// Issue returns a new token for id, valid until revoked.
func (a *Authenticator) Issue(id Identity) string {
	b := make([]byte, 24)
	rand.Read(b)
	tok := hex.EncodeToString(b)
	a.mu.Lock()
	a.Valid[tok] = id
	a.mu.Unlock()
	return tok
}

// Revoke makes every token whose identity matches refused from now on.
func (a *Authenticator) Revoke(match func(Identity) bool) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for tok, id := range a.Valid {
		if match(id) {
			delete(a.Valid, tok)
			a.Revoked[tok] = id
			n++
		}
	}
	return n
}

// Counts returns the reviews answered so far: accepted, refused.
func (a *Authenticator) Counts() (accepted, refused uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.accepted, a.refused
}

// review answers one TokenReview.
func (a *Authenticator) review(w http.ResponseWriter, r *http.Request) {
	var tr authnv1.TokenReview
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&tr); err != nil {
		http.Error(w, "bad TokenReview", http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	id, ok := a.Valid[tr.Spec.Token]
	if ok {
		a.accepted++
	} else {
		a.refused++
	}
	a.mu.Unlock()
	out := authnv1.TokenReview{TypeMeta: tr.TypeMeta}
	out.APIVersion, out.Kind = authnv1.SchemeGroupVersion.String(), "TokenReview"
	if ok {
		out.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{
			Username: id.Username(), UID: id.Username(), Groups: []string{"system:masters", rotationGroup}}}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// WebhookKubeconfig writes the kubeconfig kube-apiserver reads to reach the
// authenticator (plain HTTP on loopback) into dir.
func (a *Authenticator) WebhookKubeconfig(dir string) (string, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["authn"] = &clientcmdapi.Cluster{Server: "http://" + a.ln.Addr().String() + "/"}
	kc.AuthInfos["apiserver"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["authn"] = &clientcmdapi.Context{Cluster: "authn", AuthInfo: "apiserver"}
	kc.CurrentContext = "authn"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "authn-webhook.kubeconfig")
	return file, os.WriteFile(file, data, 0o600)
}

// auditPolicy logs, at Metadata and once complete, every request but the
// apiserver's own loopback ones: the rotating identities' requests and
// the requests that failed authentication (those carry no user).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: ["system:apiserver"]
- level: Metadata
`

// RotationAPIServers returns the hook that makes workload apiserver i
// authenticate bearer tokens through a and write its audit log to
// auditLogs[i] (files in dir).
func RotationAPIServers(a *Authenticator, dir string, k int) (configure func(int, *envtest.Environment), auditLogs []string, err error) {
	webhook, err := a.WebhookKubeconfig(dir)
	if err != nil {
		return nil, nil, err
	}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, nil, err
	}
	for i := range k {
		auditLogs = append(auditLogs, filepath.Join(dir, fmt.Sprintf("audit-%d.log", i)))
	}
	configure = func(i int, env *envtest.Environment) {
		env.ControlPlane.GetAPIServer().Configure().
			Append("authentication-token-webhook-config-file", webhook).
			Append("authentication-token-webhook-version", "v1").
			Append("authentication-token-webhook-cache-ttl", WebhookCacheTTL.String()).
			Append("audit-policy-file", policy).
			Append("audit-log-path", auditLogs[i]).
			Append("audit-log-mode", "blocking")
	}
	return configure, auditLogs, nil
}
