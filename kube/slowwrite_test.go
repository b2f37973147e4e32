package kube

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/pool"
)

// webhookDelay is how long the test's admission webhook takes to answer:
// more than the first-byte deadline's 2 s floor, well within Kubernetes'
// 10 s default webhook timeout.
const webhookDelay = 3 * time.Second

// slowWebhook starts, on 127.0.0.1 with a self-signed certificate, a
// validating admission webhook that allows every request after
// webhookDelay, and registers it on the workload apiserver for ConfigMaps
// created in namespaces labeled for it. It returns how many reviews it
// answered; the registration is deleted at the end of the test.
func slowWebhook(t *testing.T, admin client.Client, label string) *atomic.Int32 {
	t.Helper()
	var reviews atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		select {
		case <-time.After(webhookDelay):
		case <-r.Context().Done():
			return
		}
		reviews.Add(1)
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(&review) //nolint:errcheck // the apiserver sees a cut answer
	}))
	t.Cleanup(srv.Close)
	url := srv.URL + "/validate"
	fail, none, timeout := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone, int32(10)
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "issue33-slow-" + label},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "slow.issue33.clusterpool.test",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url,
				CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
					Resources: []string{"configmaps"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"issue33-webhook": label}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	ctx := context.Background()
	if err := admin.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Delete(context.Background(), cfg) }) //nolint:errcheck // best effort
	return &reviews
}

// Issue 33, the request guard's design defect: a workload cluster whose
// admission webhook answers in 3 s (above the first-byte deadline's 2 s
// floor) is healthy. 30 creates in a row through the pool's client all
// succeed, none is canceled, the breaker stays closed and the cluster
// connected; the first-byte deadline stays below the webhook's latency
// (a slow answer is not the cluster's latency), so the guard kept each
// create because the cluster answered its probe, not because it learned
// to wait. A cluster that hangs every request is still cut at its
// deadline: TestHungRequestsOpenTheBreaker and the other hang tests.
func TestSlowWebhookWritesAreNotCut(t *testing.T) {
	needEnvtest(t)
	ctx := context.Background()
	admin, err := client.New(workCfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "issue33-slow-writes",
		Labels: map[string]string{"issue33-webhook": "slow"}}}
	if err := admin.Create(ctx, ns); err != nil && !isAlreadyExists(err) {
		t.Fatal(err)
	}
	reviews := slowWebhook(t, admin, "slow")
	webhookActive(t, admin, ns.Name, reviews)

	key := client.ObjectKey{Namespace: "fleet", Name: "slow-writes"}
	putKubeconfig(t, key, kubeconfig(t, "", ""))
	p, _ := newTestPool(t, DialerOptions{}, pool.Options[client.ObjectKey, *Cluster]{MaxWait: 10 * time.Second})
	c := getEventually(t, p, key)
	if err := c.Uncached.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "absent"}, &corev1.ConfigMap{}); err == nil {
		t.Fatal("absent ConfigMap found")
	}
	before := reviews.Load()
	for i := range 30 {
		start := time.Now()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: fmt.Sprintf("slow-%d", i)}}
		if err := c.Client.Create(ctx, cm); err != nil {
			t.Fatalf("create %d after %v: %v (cluster state %+v)", i, time.Since(start), err, p.State(key))
		}
		if took := time.Since(start); took < webhookDelay {
			t.Fatalf("create %d took %v: it did not wait for the webhook", i, took)
		}
	}
	if n := reviews.Load() - before; n != 30 {
		t.Errorf("the webhook reviewed %d creates, want 30", n)
	}
	checkUntouched(t, p, c)
}

// webhookActive waits until a create in namespace ns goes through the
// webhook: the apiserver loads its registration asynchronously.
func webhookActive(t *testing.T, admin client.Client, ns string, reviews *atomic.Int32) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; reviews.Load() == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatal("the apiserver never called the webhook")
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("warm-%d", i)}}
		if err := admin.Create(context.Background(), cm); err != nil {
			t.Fatal(err)
		}
	}
}

// checkUntouched fails the test unless c is still the pool's client of a
// cluster connected with a closed breaker and no failure, and the guard's
// first-byte deadline is below the webhook's latency.
func checkUntouched(t *testing.T, p *pool.Pool[client.ObjectKey, *Cluster], c *Cluster) {
	t.Helper()
	if s := p.State(c.Key); s.Breaker != breaker.StateClosed || s.ConsecutiveFailures != 0 || !s.Connected {
		t.Errorf("cluster state %+v, want connected with a closed breaker and no failure", s)
	}
	if got, ok := p.Peek(c.Key); !ok || got != c {
		t.Error("the cluster's client was replaced")
	}
	if d := c.guard.FirstByteDeadline(); d >= webhookDelay {
		t.Errorf("first-byte deadline %v: the test no longer shows that a write past its deadline is kept", d)
	}
}
