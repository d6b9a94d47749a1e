//go:build !gosbxgoinit

package nsinit

// rawInitDefault says whether a launch takes the raw init when its process allowed it
// (AllowRawInit: gosbx exec) and its config allows it (rawWanted). On: every
// integration test passes with it, and an attack review of it found no way out
// (docs/decisions.md, "the raw init"). A -tags gosbxgoinit build turns it off, so that
// the same tests prove the Go init for those launches too (make integration-goinit).
const rawInitDefault = true
