//go:build !gosbxfault

// Package fault lets tests make any setup step of the launcher or the init fail on
// request. It is active only in binaries built with -tags gosbxfault (the fault
// injection test builds one); in every other build Check is a no-op.
package fault

// Enabled says whether this build injects faults.
const Enabled = false

// Check returns an error when the step should fail (never, in this build).
func Check(step string) error { return nil }

// Env is what the launcher passes to the init so that it sees the same request.
func Env() []string { return nil }
