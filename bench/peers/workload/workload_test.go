package workload

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestParsePlan(t *testing.T) {
	p, err := ParsePlan([]string{"-kubeconfig", "k", "-roles", "a=healthy,b=dead,c=recovering,d=flapping", "-objects", "2", "-saturate"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Roles) != 4 || p.Roles["c"] != Recovering || !p.Saturate || p.Objects != 2 || p.Workers != 10 {
		t.Fatalf("plan %+v", p)
	}
	for _, args := range [][]string{
		{"-roles", "a=healthy"},                                   // no kubeconfig
		{"-kubeconfig", "k", "-roles", "a=sick"},                  // unknown role
		{"-kubeconfig", "k", "-roles", ""},                        // no cluster
		{"-kubeconfig", "k", "-roles", "a=dead", "-objects", "0"}, // no object
	} {
		if _, err := ParsePlan(args); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

func TestRequests(t *testing.T) {
	p := Plan{Roles: map[string]Role{"a": Healthy}, Objects: 3}
	reqs := p.Requests(keyOf("ns", "a"))
	if len(reqs) != 3 || reqs[2].Name != "a-2" || reqs[2].Namespace != "ns" {
		t.Fatalf("requests %v", reqs)
	}
	if reqs := p.Requests(keyOf("ns", "other")); reqs != nil {
		t.Fatalf("requests of an unknown cluster: %v", reqs)
	}
}

func TestRecorder(t *testing.T) {
	plan := Plan{Roles: map[string]Role{"h": Healthy, "r": Recovering, "d": Dead}, Objects: 2, Bucket: time.Hour}
	rec := NewRecorder(plan)
	rec.Begin()
	start := time.Now()
	rec.Record("h", "h-0", start, 0, Succeeded)
	rec.Record("h", "h-0", start, 0, Succeeded) // not a first success
	rec.Record("d", "d-0", start, time.Second, Failed)
	rec.Record("r", "r-0", start, 2*time.Second, Requeued)
	rec.Record("h", "h-1", start, 0, Succeeded)
	rec.Record("r", "r-0", start, 0, Succeeded)
	select {
	case <-rec.AllDone():
		t.Fatal("done before r-1 reconciled")
	default:
	}
	rec.Record("r", "r-1", start, 0, Succeeded)
	<-rec.AllDone()
	f := rec.Figures()
	if f.Reconciles != 7 || f.Requeues != 1 || f.Errors != 1 || f.BlockedWorkerSeconds != 3 || f.AllReconciled < 0 {
		t.Fatalf("figures %+v", f)
	}
	if len(f.ClusterDoneUnixMs) != 2 || f.ClusterDoneUnixMs["d"] != 0 {
		t.Fatalf("clusters done %v", f.ClusterDoneUnixMs)
	}
	if len(f.Series) != 1 || f.Series[0].Reconciles != 7 {
		t.Fatalf("series %+v", f.Series)
	}
	if !strings.HasPrefix(ObjectName("c", 4), "c-4") {
		t.Fatal(ObjectName("c", 4))
	}
}

func keyOf(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

// OKP99Ms counts successful reconciles only; P99Ms every one.
func TestOKP99(t *testing.T) {
	rec := NewRecorder(Plan{Roles: map[string]Role{"h": Healthy, "d": Dead}, Objects: 1, Bucket: time.Hour})
	rec.Begin()
	rec.Record("d", "d-0", time.Now().Add(-10*time.Second), 10*time.Second, Failed)
	rec.Record("h", "h-0", time.Now(), 0, Succeeded)
	if f := rec.Figures(); f.P99Ms < 10000 || f.OKP99Ms >= 1000 {
		t.Fatalf("p99 %.0f ms, ok p99 %.0f ms; want the 10 s failure in the first only", f.P99Ms, f.OKP99Ms)
	}
}

// The healthy p99 counts only healthy clusters' successes that started at
// or after -measure-from, which the plan reads as Unix ms.
func TestHealthyOKP99FromMeasureFrom(t *testing.T) {
	from := time.Now().Add(-time.Second).Truncate(time.Millisecond)
	p, err := ParsePlan([]string{"-kubeconfig", "k", "-roles", "h=healthy,g=gray", "-measure-from", strconv.FormatInt(from.UnixMilli(), 10)})
	if err != nil || !p.MeasureFrom.Equal(from) || p.Roles["g"] != Gray {
		t.Fatalf("plan %+v, %v", p, err)
	}
	r := NewRecorder(p)
	r.Record("h", "h-0", from.Add(-time.Minute), 0, Succeeded) // before: a minute long
	r.Record("g", "g-0", from.Add(-30*time.Second), 0, Succeeded)
	r.Record("g", "g-1", from, 0, Succeeded) // gray: about a second long
	r.Record("h", "h-1", time.Now().Add(-100*time.Millisecond), 0, Succeeded)
	if f := r.Figures(); f.HealthyOKP99Ms < 100 || f.HealthyOKP99Ms > 900 || f.OKP99Ms < 60_000 {
		t.Fatalf("healthy ok p99 %v ms (want the one healthy reconcile since from, ≈ 100), ok p99 %v", f.HealthyOKP99Ms, f.OKP99Ms)
	}
}
