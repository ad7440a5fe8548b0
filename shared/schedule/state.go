package schedule

// State is what schedules hold at an instant: closed, opened, or none when no schedule is
// active. The values are those of a GateKeeper's status.active.
type State string

const (
	// Closed: a closed schedule is active.
	Closed State = "closed"
	// Opened: an opened schedule is active, and no closed one.
	Opened State = "opened"
	// None: no schedule is active.
	None State = "none"
)
