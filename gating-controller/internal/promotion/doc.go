// Package promotion decides a gate's spec.promotion (docs/gate.md, "Promotion"): which revision
// the objects upstream (staging) have applied, since when they have kept it applied and Ready,
// and whether it has soaked long enough to be promoted. Every time it reads comes from the
// objects themselves (their Ready condition, status.history, the artifact), so a restart of the
// controller neither restarts nor shortens a soak.
package promotion
