package chaos

import "strings"

// samplesFile is where the time-back samples of a report written to file
// go: X-samples.json beside X.json (none without a report file).
func samplesFile(file string) string {
	if file == "" {
		return ""
	}
	return strings.TrimSuffix(file, ".json") + "-samples.json"
}

// samplesOf is every cache's time-back samples, by cache.
func samplesOf(res []chaosResult) map[string][]backSample {
	out := map[string][]backSample{}
	for _, r := range res {
		out[r.Cache] = r.Samples
	}
	return out
}
