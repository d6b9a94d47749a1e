//go:build gosbxrawinit

package nsinit

// rawInitDefault is on in a -tags gosbxrawinit build: the test switch that runs the
// integration tests against the raw init.
const rawInitDefault = true
