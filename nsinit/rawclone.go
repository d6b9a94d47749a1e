package nsinit

import (
	"github.com/gosbx/gosbx/internal/rawplan"
)

// readRawReport is rawplan.ReadReport as the Go init's step error: nil once the raw
// child's plan ran (end of file), else a *stepError naming the step that failed.
func readRawReport(p *rawplan.Plan, fd int) error {
	step, err := rawplan.ReadReport(p, fd)
	if err == nil {
		return nil
	}
	return &stepError{step, err}
}
