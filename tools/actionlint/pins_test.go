// Package pins_test checks the actionlint wrapper module: its one tool is actionlint's command, and the
// module graph selects exactly the actionlint version go.mod requires (the one
// scripts/check-workflows.sh builds and reports).
package pins_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const (
	module = "github.com/rhysd/actionlint"
	tool   = "github.com/rhysd/actionlint/cmd/actionlint"
)

func goCmd(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

func TestTheToolIsActionlintAtTheRequiredVersion(t *testing.T) {
	var mod struct {
		Require []struct{ Path, Version string }
		Tool    []struct{ Path string }
	}
	if err := json.Unmarshal(goCmd(t, "mod", "edit", "-json"), &mod); err != nil {
		t.Fatal(err)
	}
	if len(mod.Tool) != 1 || mod.Tool[0].Path != tool {
		t.Fatalf("go.mod tools = %v, want exactly %s", mod.Tool, tool)
	}
	wanted := ""
	for _, r := range mod.Require {
		if r.Path == module {
			wanted = r.Version
		}
	}
	if wanted == "" {
		t.Fatalf("go.mod does not require %s", module)
	}
	selected := strings.TrimSpace(string(goCmd(t, "list", "-mod=readonly", "-m", "-f", "{{.Version}}", module)))
	if selected != wanted {
		t.Fatalf("the module graph selects %s %s, go.mod requires %s", module, selected, wanted)
	}
}
