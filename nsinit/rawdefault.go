//go:build !gosbxrawinit

package nsinit

// rawInitDefault says whether a launch takes the raw init when its config allows
// (rawWanted). Off: the raw init is built behind a test switch until every integration
// test passes with it (a -tags gosbxrawinit build forces it on).
const rawInitDefault = false
