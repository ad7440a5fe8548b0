package promotion

import (
	"fmt"
	"strings"
	"time"
)

// Result is where a promotion stands.
type Result struct {
	// Candidate is the revision the objects have applied and that is not promoted yet.
	Candidate string
	// SoakingSince is since when they have all kept Candidate applied and Ready; nil while one
	// of them is not.
	SoakingSince *time.Time
	// OpensAt is when Candidate will have soaked.
	OpensAt *time.Time
	// Soaked: Candidate has soaked; it is promoted now.
	Soaked bool
	// Message says what the promotion waits for, or why Candidate is promoted.
	Message string
}

// Evaluate decides the promotion at now: the objects must all have applied one revision, other
// than the one promoted last, and kept it Ready for soak (since the latest of their Since).
func Evaluate(objs []Observed, soak time.Duration, promoted string, now time.Time) Result {
	var res Result
	for _, o := range objs {
		if o.Revision != "" && res.Candidate == "" {
			res.Candidate = o.Revision
		}
		if o.Revision != "" && o.Revision != res.Candidate {
			var applied []string
			for _, o := range objs {
				applied = append(applied, fmt.Sprintf("%s applied '%s'", o.Name, o.Revision))
			}
			return Result{Message: "waiting for the objects to apply one revision: " + strings.Join(applied, ", ")}
		}
	}
	if res.Candidate == promoted && promoted != "" {
		return Result{Message: fmt.Sprintf("revision '%s' is promoted; no newer revision is applied upstream", promoted)}
	}
	var since time.Time
	for _, o := range objs {
		if o.NotReady != "" {
			res.Message = fmt.Sprintf("waiting for %s: %s", o.Name, o.NotReady)
			if res.Candidate != "" {
				res.Message = fmt.Sprintf("revision '%s' waits for %s: %s", res.Candidate, o.Name, o.NotReady)
			}
			return res
		}
		if o.Since.After(since) {
			since = o.Since
		}
	}
	opens := since.Add(soak)
	res.SoakingSince, res.OpensAt = &since, &opens
	names := make([]string, len(objs))
	for i, o := range objs {
		names[i] = o.Name
	}
	if now.Before(opens) {
		res.Message = fmt.Sprintf("revision '%s' soaking since %s in %s: promoted at %s unless it fails before",
			res.Candidate, since.UTC().Format(time.RFC3339), strings.Join(names, ", "), opens.UTC().Format(time.RFC3339))
		return res
	}
	res.Soaked = true
	res.Message = fmt.Sprintf("revision '%s' applied and Ready for %s in %s", res.Candidate,
		now.Sub(since).Truncate(time.Second), strings.Join(names, ", "))
	return res
}
