//go:build gosbxfault

package fault

import (
	"fmt"
	"os"
)

// Enabled says whether this build injects faults.
const Enabled = true

// Var names the step to fail: GOSBX_FAULT=<step>.
const Var = "GOSBX_FAULT"

// Check returns an error when $GOSBX_FAULT names step.
func Check(step string) error {
	if os.Getenv(Var) == step {
		return fmt.Errorf("fault injected at %q", step)
	}
	return nil
}

// Env passes $GOSBX_FAULT on to the init, whose environment is otherwise empty.
func Env() []string {
	if v := os.Getenv(Var); v != "" {
		return []string{Var + "=" + v}
	}
	return nil
}
