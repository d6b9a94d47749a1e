//go:build gosbxgoinit

package nsinit

// rawInitDefault is off in a -tags gosbxgoinit build: every launch takes the Go init
// (the test switch that runs the integration tests against it where the raw init would
// serve: make integration-goinit).
const rawInitDefault = false
