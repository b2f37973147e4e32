package kube

import (
	"net/http/httptest"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/pool"
)

func kubeconfigSecret(key client.ObjectKey, kc string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: KubeconfigSecretName(key.Name)},
		Data: map[string][]byte{KubeconfigSecretKey: []byte(kc)}}
}

// A changed kubeconfig re-dials a connected cluster built from other
// credentials, and asks for the probe of every cluster not connected (the
// pool sends it at once if the breaker is open, and does nothing
// otherwise); it leaves alone a cluster built from the same credentials.
func TestSecretWatcherReactions(t *testing.T) {
	srv := httptest.NewServer(nil)
	defer srv.Close()
	fp := newFakePool()
	w := &SecretWatcher{Pool: fp}
	same, rotated := client.ObjectKey{Namespace: "f", Name: "same"}, client.ObjectKey{Namespace: "f", Name: "rotated"}
	open, removed := client.ObjectKey{Namespace: "f", Name: "open"}, client.ObjectKey{Namespace: "f", Name: "removed"}
	fp.connect(fakeCluster(same, srv, KubeconfigRevision([]byte("A"))))
	fp.connect(fakeCluster(rotated, srv, KubeconfigRevision([]byte("A"))))
	fp.states[open] = pool.ClusterState{Known: true, Breaker: breaker.StateOpen}
	fp.states[removed] = pool.ClusterState{Known: true, Breaker: breaker.StateClosed}
	for _, k := range []client.ObjectKey{same, open, removed} {
		w.changed(kubeconfigSecret(k, "A"))
	}
	w.changed(kubeconfigSecret(rotated, "B"))
	want := []string{"probe f/open", "probe f/removed", "redial f/rotated"}
	if got := fp.callLog(); !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	if sameKubeconfig(kubeconfigSecret(same, "A"), kubeconfigSecret(same, "B")) ||
		!sameKubeconfig(kubeconfigSecret(same, "A"), kubeconfigSecret(same, "A")) {
		t.Error("sameKubeconfig compares the wrong thing")
	}
}

// With Connect, a Secret of a cluster the pool holds no client for asks
// the pool to connect it (a new cluster, or one whose last dial failed
// with the breaker still closed; the pool does nothing while a dial runs);
// without it, nothing but the probe (a no-op for a closed breaker) until a
// Get.
func TestSecretWatcherConnect(t *testing.T) {
	fresh := client.ObjectKey{Namespace: "f", Name: "fresh"}
	failed := client.ObjectKey{Namespace: "f", Name: "failed"}
	dialing := client.ObjectKey{Namespace: "f", Name: "dialing"}
	fp := newFakePool()
	fp.states[failed] = pool.ClusterState{Known: true, Breaker: breaker.StateClosed, ConsecutiveFailures: 1}
	fp.states[dialing] = pool.ClusterState{Known: true, Dialing: true}
	for _, k := range []client.ObjectKey{fresh, failed, dialing} {
		(&SecretWatcher{Pool: fp}).changed(kubeconfigSecret(k, "A"))
	}
	probes := []string{"probe f/fresh", "probe f/failed", "probe f/dialing"}
	if got := fp.callLog(); !slices.Equal(got, probes) {
		t.Fatalf("without Connect: calls %v, want %v", got, probes)
	}
	for _, k := range []client.ObjectKey{fresh, failed, dialing} {
		(&SecretWatcher{Pool: fp, Connect: true}).changed(kubeconfigSecret(k, "A"))
	}
	want := append(probes, "probe f/fresh", "connect f/fresh", "probe f/failed", "connect f/failed",
		"probe f/dialing", "connect f/dialing")
	if got := fp.callLog(); !slices.Equal(got, want) {
		t.Fatalf("with Connect: calls %v, want %v", got, want)
	}
}

// With Admit, only admitted clusters are dialed (Connect) or re-dialed
// (rotation, open breaker): another provider's kubeconfig Secret, or one of
// a filtered-out Cluster, costs nothing (Cluster API #12657).
func TestSecretWatcherAdmit(t *testing.T) {
	srv := httptest.NewServer(nil)
	defer srv.Close()
	ours, other := client.ObjectKey{Namespace: "f", Name: "ours"}, client.ObjectKey{Namespace: "f", Name: "other"}
	rotOurs, rotOther := client.ObjectKey{Namespace: "f", Name: "rot-ours"}, client.ObjectKey{Namespace: "f", Name: "rot-other"}
	openOther := client.ObjectKey{Namespace: "f", Name: "open-other"}
	fp := newFakePool()
	fp.connect(fakeCluster(rotOurs, srv, KubeconfigRevision([]byte("A"))))
	fp.connect(fakeCluster(rotOther, srv, KubeconfigRevision([]byte("A"))))
	fp.states[openOther] = pool.ClusterState{Known: true, Breaker: breaker.StateOpen}
	admitted := map[client.ObjectKey]bool{ours: true, rotOurs: true}
	w := &SecretWatcher{Pool: fp, Connect: true, Admit: func(k client.ObjectKey) bool { return admitted[k] }}
	for _, k := range []client.ObjectKey{ours, other, openOther} {
		w.changed(kubeconfigSecret(k, "A"))
	}
	w.changed(kubeconfigSecret(rotOurs, "B"))
	w.changed(kubeconfigSecret(rotOther, "B"))
	want := []string{"probe f/ours", "connect f/ours", "redial f/rot-ours"}
	if got := fp.callLog(); !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
}

// A Secret that changes while its cluster is dialing is checked again when
// the cluster connects: a cluster that connected with the credentials it
// read before the change is redone (the fake cluster cannot rotate in
// place: Redial), one that read the new ones is left alone, and each kept
// Secret is checked once. Removed forgets a kept Secret.
func TestSecretWatcherChecksAgainOnConnect(t *testing.T) {
	srv := httptest.NewServer(nil)
	defer srv.Close()
	stale, fresh := client.ObjectKey{Namespace: "f", Name: "stale"}, client.ObjectKey{Namespace: "f", Name: "fresh"}
	gone := client.ObjectKey{Namespace: "f", Name: "gone"}
	fp := newFakePool()
	for _, k := range []client.ObjectKey{stale, fresh, gone} {
		fp.states[k] = pool.ClusterState{Known: true, Dialing: true}
	}
	w := &SecretWatcher{Pool: fp}
	for _, k := range []client.ObjectKey{stale, fresh, gone} {
		w.changed(kubeconfigSecret(k, "B"))
	}
	probes := []string{"probe f/stale", "probe f/fresh", "probe f/gone"} // no-ops while dialing
	if got := fp.callLog(); !slices.Equal(got, probes) {
		t.Fatalf("while dialing: calls %v, want %v", got, probes)
	}
	fp.connect(fakeCluster(stale, srv, KubeconfigRevision([]byte("A")))) // read before the change
	fp.connect(fakeCluster(fresh, srv, KubeconfigRevision([]byte("B"))))
	w.event(pool.Event[client.ObjectKey]{Type: pool.Removed, Key: gone})
	fp.connect(fakeCluster(gone, srv, KubeconfigRevision([]byte("A"))))
	for _, k := range []client.ObjectKey{stale, fresh, gone, stale} {
		w.event(pool.Event[client.ObjectKey]{Type: pool.Connected, Key: k})
	}
	if got, want := fp.callLog(), append(probes, "redial f/stale"); !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
}

// event records ev as a Reconciler's loop does, then acts at once on what
// it left pending, as the cluster's worker does once the queue hands it
// the cluster.
func (w *SecretWatcher) event(ev pool.Event[client.ObjectKey]) {
	if w.noted(ev) {
		w.reconcile(ev.Key)
	}
}

// changed acts on obj at once as on a kubeconfig Secret added now, as the
// cluster's worker does once the queue hands it the cluster.
func (w *SecretWatcher) changed(obj any) {
	if s, _, ok := kubeconfigSecretOf(obj); ok {
		w.act(change{s: s})
	}
}
