package receiver

import "time"

// Limits bound what a caller can make the receiver do.
type Limits struct {
	// Window is how far a request's timestamp may be from the receiver's clock, either way, and
	// how long an accepted request is remembered to refuse its replay (default 5m).
	Window time.Duration
	// RateInterval is how often a gate accepts one more request once its burst is spent
	// (default 6s); Burst is how many requests it accepts at once (default 10).
	RateInterval time.Duration
	Burst        int
	// MaxRemembered bounds the accepted requests remembered for the replay check (default
	// 4096); when it is full of requests still in the window, new requests get 429.
	MaxRemembered int
	// MaxBody is the largest request body read (default 16 KiB).
	MaxBody int64
}

func (l Limits) withDefaults() Limits {
	if l.Window <= 0 {
		l.Window = 5 * time.Minute
	}
	if l.RateInterval <= 0 {
		l.RateInterval = 6 * time.Second
	}
	if l.Burst <= 0 {
		l.Burst = 10
	}
	if l.MaxRemembered <= 0 {
		l.MaxRemembered = 4096
	}
	if l.MaxBody <= 0 {
		l.MaxBody = 16 << 10
	}
	return l
}
