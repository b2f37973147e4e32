package main

import (
	"encoding/json"
	"slices"
	"testing"
)

// A class the run has that the plot's list lacks (a new registry entry)
// gets a row of its own below the listed ones, once; a run without it
// has the listed rows only.
func TestClassRowsAddsUnlistedClasses(t *testing.T) {
	var rep chaosReport
	in := `{"results":[{"cache":"adapter","events":[{"class":"reset"},{"class":"gray-slow"},{"class":"gray-slow"}]}]}`
	if err := json.Unmarshal([]byte(in), &rep); err != nil {
		t.Fatal(err)
	}
	got := classRows(rep)
	if want := append(slices.Clone(chaosClassOrder), "gray-slow"); !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	rep.Results[0].Events = rep.Results[0].Events[:1]
	if got := classRows(rep); !slices.Equal(got, chaosClassOrder) {
		t.Fatalf("rows %v, want %v", got, chaosClassOrder)
	}
}
