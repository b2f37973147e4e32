package chaos

import "testing"

func TestSamplesFile(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "",
		"results/chaos.json": "results/chaos-samples.json",
		"/tmp/run":           "/tmp/run-samples.json",
	} {
		if got := samplesFile(in); got != want {
			t.Errorf("samplesFile(%q) = %q, want %q", in, got, want)
		}
	}
	got := samplesOf([]chaosResult{{Cache: "adapter", Samples: []backSample{{Fault: 1}}}, {Cache: "stock"}})
	if len(got["adapter"]) != 1 || got["adapter"][0].Fault != 1 || len(got["stock"]) != 0 {
		t.Errorf("samplesOf = %v", got)
	}
}
