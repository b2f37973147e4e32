package protocol

// IdleMarker starts the lines a scale run's peer prints on stderr when its
// idle window starts ("<IdleMarker>start") and ends ("<IdleMarker>end"):
// the driver counts the apiservers' requests between them, and the
// process's connections after the end marker, then answers with a line on
// stdin. A peer prints IdleMarker+name for its other pauses.
const IdleMarker = "bench-peers: idle "

// FaultsMarker is the name a scale run's peer prints after IdleMarker once
// it watches its sampled clusters: the driver injects its faults, then
// answers.
const FaultsMarker = "faults"

// The names under which a load window's summaries are reported
// (Figures.Timings): every call, and the calls that failed.
const (
	LoadGetName    = "load_get"
	LoadFailedName = "load_get_failed"
)
