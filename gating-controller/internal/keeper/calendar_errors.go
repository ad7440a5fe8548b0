package keeper

import (
	"errors"
	"time"
)

const (
	// CalendarRetry is how soon a keeper whose calendar cannot be read looks again, besides
	// the watch on its ConfigMap or source.
	CalendarRetry = 5 * time.Minute
	// DownloadRetry is how soon a keeper and its gate look again after a failed download of
	// their calendar's artifact, which no watch reports the end of.
	DownloadRetry = 30 * time.Second
	// CalendarRefresh is how often a keeper with a calendar is evaluated at least: its
	// calendar is expanded over the horizon from the last evaluation only.
	CalendarRefresh = 24 * time.Hour
)

// CalendarError is a calendar that cannot be read: the keeper is not stalled, as the ConfigMap
// or source may appear or be fixed without a change of the keeper.
type CalendarError struct {
	err error
	// retry is how soon the gate looks again, for what no watch reports (a failed download);
	// zero when the watch on a ConfigMap does. The keeper looks again after CalendarRetry at
	// the latest.
	retry time.Duration
}

func (e *CalendarError) Error() string { return e.err.Error() }
func (e *CalendarError) Unwrap() error { return e.err }

// WatchlessRetry is how soon a gate looks again at its keeper's calendar that failed with err,
// zero when a watch reports its fix.
func WatchlessRetry(err error) time.Duration {
	var ce *CalendarError
	if errors.As(err, &ce) {
		return ce.retry
	}
	return 0
}

// KeeperRetry is how soon a keeper looks again at a calendar that failed with err.
func KeeperRetry(err error) time.Duration {
	var ce *CalendarError
	if errors.As(err, &ce) && ce.retry > 0 && ce.retry < CalendarRetry {
		return ce.retry
	}
	return CalendarRetry
}

// TransientError is a failure to read the calendar's ConfigMap from the API server: retried,
// never taken for a broken keeper.
type TransientError struct{ err error }

func (e *TransientError) Error() string { return e.err.Error() }
func (e *TransientError) Unwrap() error { return e.err }

// IsTransient: err is a failure of the API server, not of the keeper or its calendar.
func IsTransient(err error) bool {
	var te *TransientError
	return errors.As(err, &te)
}

// IsCalendarError: the keeper cannot be evaluated because of its calendar, not its spec.
func IsCalendarError(err error) bool {
	var ce *CalendarError
	return errors.As(err, &ce)
}
