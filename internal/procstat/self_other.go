//go:build !unix

package procstat

import "time"

// Self returns the user and system time this process has used so far (0
// where the platform does not say).
func Self() time.Duration { return 0 }
