package beforeafter

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
)

// Options are the command line of the -before-after report
// (make bench-before-after): the shared flags (it reads -json), and Dir,
// which holds the raw outputs of hack/before-after.sh.
type Options struct {
	*fleet.Shared
	Dir string
}

// Register defines the -before-after report's flag on fs; the
// Options it returns read the shared ones from sh.
func Register(fs *flag.FlagSet, sh *fleet.Shared) *Options {
	o := &Options{Shared: sh}
	fs.StringVar(&o.Dir, "before-after", "", "run nothing: print the before/after report of the raw outputs hack/before-after.sh wrote to this directory (make bench-before-after)")
	return o
}

// beforeLabel is the name the before tree's programs run under: the
// bench-peers run's -peer and the mhc run's -mhc-peer.
const beforeLabel = "before"

// unchangedWithin is how far, as a fraction of before, after may be on
// the wrong side and still count as unchanged.
const unchangedWithin = 0.05

// baValue is a figure; NaN is one never reached (JSON null).
type baValue float64

// MarshalJSON writes NaN and infinities as null.
func (v baValue) MarshalJSON() ([]byte, error) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

// baRow is one figure, before and after.
type baRow struct {
	Figure       string  `json:"figure"`
	Before       baValue `json:"before"`
	After        baValue `json:"after"`
	Ratio        baValue `json:"after_over_before"`
	HigherBetter bool    `json:"higher_better,omitempty"`
	// Verdict is better, unchanged or worse (by more than
	// unchangedWithin), or info for a figure that is neither.
	Verdict string `json:"verdict"`
	format  string
}

// newRow compares before and after of a figure printed with format.
func newRow(figure, format string, before, after float64, higherBetter, info bool) baRow {
	r := baRow{Figure: figure, Before: baValue(before), After: baValue(after), Ratio: baValue(math.NaN()),
		HigherBetter: higherBetter, Verdict: verdict(before, after, higherBetter), format: format}
	if before > 0 && after >= 0 {
		r.Ratio = baValue(after / before)
	}
	if info {
		r.Verdict = "info"
	}
	return r
}

// verdict judges after against before; NaN is never reached.
func verdict(before, after float64, higherBetter bool) string {
	switch {
	case math.IsNaN(before) && math.IsNaN(after), before == after:
		return "unchanged"
	case math.IsNaN(after):
		return "worse"
	case math.IsNaN(before):
		return "better"
	}
	d := (after - before) / math.Abs(before)
	if higherBetter {
		d = -d
	}
	switch {
	case d > unchangedWithin:
		return "worse"
	case d < -unchangedWithin:
		return "better"
	}
	return "unchanged"
}

// baSection is one bar: how it was measured, its raw files and figures.
type baSection struct {
	Bar      string   `json:"bar"`
	Measured string   `json:"measured"`
	Raw      []string `json:"raw"`
	Rows     []baRow  `json:"rows"`
	// Missing says why the bar has no figures (not run, or no before).
	Missing string `json:"missing,omitempty"`
}

// baReport is the -json output of the -before-after report.
type baReport struct {
	fleet.Stamp
	Before          string      `json:"before"`
	After           string      `json:"after"`
	UnchangedWithin float64     `json:"unchanged_within"`
	Sections        []baSection `json:"sections"`
}

// baSources are the bars in report order, each read from the raw outputs
// in a directory (beforeafter_sources.go).
var baSources = []func(dir string) (baSection, error){benchSection, soakSection, peersSection, mhcSection}

// Run is the -before-after report: every bar's figures from
// the raw outputs in o.Dir, as markdown to o.Out and JSON to -json.
func Run(_ context.Context, o *Options) error {
	out := o.Out
	rep := baReport{Stamp: fleet.NewStamp(time.Now()), Before: "unknown", After: "unknown",
		UnchangedWithin: unchangedWithin}
	if err := readTrees(filepath.Join(o.Dir, "trees.txt"), &rep); err != nil {
		return err
	}
	for _, source := range baSources {
		s, err := source(o.Dir)
		if err != nil {
			return err
		}
		rep.Sections = append(rep.Sections, s)
	}
	if err := writeBeforeAfter(out, rep, filepath.Base(o.Dir)); err != nil {
		return err
	}
	return fleet.WriteJSON(o.JSONOut, rep)
}

// readTrees reads which trees were compared from file: a line
// "before <what>" and a line "after <what>".
func readTrees(file string, rep *baReport) error {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for line := range strings.Lines(string(data)) {
		tree, what, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch tree {
		case beforeLabel:
			rep.Before = what
		case "after":
			rep.After = what
		}
	}
	return nil
}

// missing is s with no figures because the file it reads is missing, or
// err if that is not the reason.
func missing(s baSection, err error) (baSection, error) {
	if errors.Is(err, fs.ErrNotExist) {
		s.Missing = "not run"
		return s, nil
	}
	return s, err
}

// writeBeforeAfter prints rep as markdown; rawDir is the directory of the
// raw outputs, relative to the report.
func writeBeforeAfter(w io.Writer, rep baReport, rawDir string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Before and after: issue 37's earlier bars\n\nBefore: %s. After: %s.\n%s, %s. Made by `make bench-before-after`; raw outputs in [%s/](%s/).\n\n",
		rep.Before, rep.After, rep.Date, rep.Machine, rawDir, rawDir)
	fmt.Fprintf(&b, "after ÷ before per figure; a figure more than %.0f %% on the wrong side of before is **worse**.\n", rep.UnchangedWithin*100)
	var worse []string
	for _, s := range rep.Sections {
		fmt.Fprintf(&b, "\n## %s\n\n%s", s.Bar, s.Measured)
		for _, f := range s.Raw {
			fmt.Fprintf(&b, " [%s](%s/%s)", f, rawDir, f)
		}
		b.WriteString("\n\n")
		if s.Missing != "" {
			fmt.Fprintf(&b, "No figures: %s.\n", s.Missing)
			continue
		}
		b.WriteString("| figure | before | after | after ÷ before | |\n|---|---|---|---|---|\n")
		for _, r := range s.Rows {
			mark := r.Verdict
			if mark == "worse" {
				mark = "**worse**"
				worse = append(worse, s.Bar+": "+r.Figure)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.Figure, r.cell(r.Before), r.cell(r.After), ratioCell(r.Ratio), mark)
		}
	}
	fmt.Fprintf(&b, "\n## Worse than before\n\n")
	if len(worse) == 0 {
		b.WriteString("None.\n")
	}
	for _, f := range worse {
		fmt.Fprintf(&b, "- %s\n", f)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cell formats one of r's values.
func (r baRow) cell(v baValue) string {
	if math.IsNaN(float64(v)) {
		return "not reached"
	}
	return fmt.Sprintf(r.format, float64(v))
}

func ratioCell(v baValue) string {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
		return "–"
	}
	return fmt.Sprintf("%.2f×", float64(v))
}
