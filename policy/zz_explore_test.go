package policy

import (
	"fmt"
	"testing"
)

func TestZZExplore(t *testing.T) {
	for _, in := range []string{
		"network:\n  mode: [\n",
		"network:\n  mode: none\nnetwork:\n  mode: host\n",
		"network:\n  mode: none\n  mode: host\n",
		"filesystem:\n  readonly: [/usr]\n",
		"filesystem:\n  read_only:\n    - path: /usr\n      optionl: true\n",
		"network:\n  mode: 3\n",
		"filesystem:\n  read_only: /usr\n",
		"network:\n  allow_host: {a: 1}\n",
		"network:\n  mode: wifi\n",
		"process:\n  timeout: soon\n",
		"filesystem:\n  tmpfs:\n    - path: /x\n      mode: \"999\"\n",
		"filesystem:\n  read_only: [usr]\n",
		"filesystem:\n  protected: [/abs]\n",
		"filesystem:\n  protected: [../x]\n",
		"filesystem:\n  read_only: [\"${nope}/x\"]\n",
		"filesystem:\n  read_only: [\"${home/x\"]\n",
		"environment:\n  set:\n    \"A=B\": x\n",
		"",
		"extends: nope\n",
		"- a\n",
		"{\"network\": {\"mode\": \"wifi\"}}",
		"{\"network\": {\"mode\": \"none\", \"mode\": \"host\"}}",
		"Network: {}\n",
		"environment:\n  Path_Prepend: [/x]\n",
		"filesystem:\n  tmpfs:\n    - path: /x\n      mode: 0700\n",
		"filesystem:\n  tmpfs:\n    - path: /x\n      mode: 777\n",
		"seccomp: {a: 1}\n",
		"network: null\n",
	} {
		p, err := Parse([]byte(in), "f.yaml")
		if err != nil {
			fe, _ := err.(*FileError)
			fmt.Printf("%q\n  -> %v  %#v\n", in, err, fe)
		} else {
			fmt.Printf("%q\n  -> OK %+v\n", in, p)
		}
	}
}
