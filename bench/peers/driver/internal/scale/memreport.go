package scale

import (
	"fmt"
	"slices"
	"strings"
)

// memFigures are where a result's resident set is (bytes), fitted over the
// results that report it: with heap_bytes (the live objects) they add up
// to rss_bytes.
var memFigures = []fitFigure{
	memFigure("mem_garbage_bytes", func(r scaleResult) int64 { return r.Memory.ObjectsBytes - r.HeapBytes }),
	memFigure("mem_headroom_bytes", func(r scaleResult) int64 { return r.Memory.HeadroomBytes }),
	memFigure("mem_stacks_bytes", func(r scaleResult) int64 { return r.Memory.StacksBytes }),
	memFigure("mem_runtime_bytes", func(r scaleResult) int64 { return r.Memory.RuntimeBytes }),
	memFigure("mem_outside_bytes", func(r scaleResult) int64 { return r.Memory.OutsideBytes }),
}

// memFigure is the figure name, of(r) of the results r that have memory
// classes.
func memFigure(name string, of func(scaleResult) int64) fitFigure {
	return fitFigure{Name: name, Of: func(r scaleResult) float64 { return float64(of(r)) },
		Has: func(r scaleResult) bool { return r.Memory != nil }}
}

// memColumns are the memory table's columns: heading and figure.
var memColumns = [][2]string{
	{"RSS", "rss_bytes"}, {"live objects", "heap_bytes"}, {"garbage", "mem_garbage_bytes"},
	{"heap headroom", "mem_headroom_bytes"}, {"stacks (goroutines)", "mem_stacks_bytes"},
	{"runtime", "mem_runtime_bytes"}, {"outside Go", "mem_outside_bytes"},
}

// writeMemory adds to b the table of where each peer's memory per cluster
// is, with each bucket's difference from the floor's, if any result has
// its memory classes.
func writeMemory(b *strings.Builder, rep scaleReport) {
	if !slices.ContainsFunc(rep.Results, func(r scaleResult) bool { return r.Memory != nil }) {
		return
	}
	b.WriteString("Where the memory per cluster is (slope over N, KiB; the difference from the floor's in brackets), read at the idle " +
		"window's end before the GC: live objects (the Go heap after it), garbage (the heap objects it freed), heap headroom " +
		"(free heap not released to the OS), goroutine stacks (goroutines per cluster), runtime (the Go runtime's metadata), outside Go " +
		"(RSS less the Go runtime's resident memory: binary, C). They add up to RSS; – : not reported.\n\n")
	b.WriteString("| peer |")
	for _, c := range memColumns {
		b.WriteString(" " + c[0] + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(memColumns)) + "\n")
	by := fitsBy(rep.Fits)
	for _, s := range strategiesOf(rep.Results) {
		name := s
		if by[s]["rss_bytes"].Single {
			name += " (÷ N)"
		}
		b.WriteString("| " + name + " |")
		for _, c := range memColumns {
			b.WriteString(" " + memCell(by, s, c[1]) + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// memCell is s's slope of figure in KiB with its difference from the
// floor's ("–" without the slope); the stacks' cell adds the goroutines.
func memCell(by map[string]map[string]fit, s, figure string) string {
	f, ok := by[s][figure]
	if !ok {
		return "–"
	}
	var notes []string
	if d, ok := floorDiff(by, s, figure, 1.0/1024, "%+.1f"); ok {
		notes = append(notes, d)
	}
	if g, ok := by[s]["goroutines"]; ok && figure == "mem_stacks_bytes" {
		d, ok := floorDiff(by, s, "goroutines", 1, "%+.2f")
		if !ok {
			d = fmt.Sprintf("%.2f", g.Slope)
		}
		notes = append(notes, d+" goroutines")
	}
	cell := fmt.Sprintf("%.1f", f.Slope/1024)
	if len(notes) > 0 {
		cell += " (" + strings.Join(notes, "; ") + ")"
	}
	return cell
}

// floorDiff is s's slope of figure less the floor's, times unit in format;
// false for the floor itself or without either slope.
func floorDiff(by map[string]map[string]fit, s, figure string, unit float64, format string) (string, bool) {
	f, ok1 := by[s][figure]
	fl, ok2 := by["floor"][figure]
	if !ok1 || !ok2 || s == "floor" {
		return "", false
	}
	return fmt.Sprintf(format, (f.Slope-fl.Slope)*unit), true
}
