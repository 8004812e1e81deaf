// Package pins_test checks the pins of the project's two Go modules: the
// Pulumi CLI wrapper (this module) and the language host
// (../pulumi-language-python) build against one tag of pkg/v3 and sdk/v3, the
// module graph selects exactly that tag, and each module carries the non-local
// replace directives of the upstream module it builds (replace directives
// only apply in the main module).
package pins_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

const (
	pkgModule  = "github.com/pulumi/pulumi/pkg/v3"
	sdkModule  = "github.com/pulumi/pulumi/sdk/v3"
	cliPackage = "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
	hostDir    = "../pulumi-language-python"
)

// goMod is the part of `go mod edit -json` used here.
type goMod struct {
	Require []struct{ Path, Version string }
	Replace []struct {
		Old, New struct{ Path, Version string }
	}
	Tool []struct{ Path string }
}

func goCmd(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, stderr)
	}
	return out
}

func readGoMod(t *testing.T, path string) goMod {
	t.Helper()
	var m goMod
	if err := json.Unmarshal(goCmd(t, ".", "mod", "edit", "-json", path), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func required(m goMod, path string) string {
	for _, r := range m.Require {
		if r.Path == path {
			return r.Version
		}
	}
	return ""
}

// remoteReplaces are the replace directives of m that point at another module
// (not a directory), as "old[@v] => new@v".
func remoteReplaces(m goMod) []string {
	var out []string
	for _, r := range m.Replace {
		if r.New.Version == "" {
			continue // a filesystem path: upstream's own checkout layout
		}
		old := r.Old.Path
		if r.Old.Version != "" {
			old += "@" + r.Old.Version
		}
		out = append(out, old+" => "+r.New.Path+"@"+r.New.Version)
	}
	sort.Strings(out)
	return out
}

// upstream reads the go.mod of module path as selected in dir's module graph,
// and checks the selected version is want.
func upstream(t *testing.T, dir, path, want string) goMod {
	t.Helper()
	var info struct{ Version, GoMod string }
	if err := json.Unmarshal(goCmd(t, dir, "mod", "download", "-json", path), &info); err != nil {
		t.Fatal(err)
	}
	selected := strings.TrimSpace(string(goCmd(t, dir, "list", "-mod=readonly", "-m", "-f", "{{.Version}}", path)))
	if selected != want {
		t.Errorf("%s: the module graph selects %s %s, go.mod requires %s", dir, path, selected, want)
	}
	return readGoMod(t, info.GoMod)
}

func TestOneTag(t *testing.T) {
	cli := readGoMod(t, "go.mod")
	host := readGoMod(t, filepath.Join(hostDir, "go.mod"))
	pkg, sdk, hostSDK := required(cli, pkgModule), required(cli, sdkModule), required(host, sdkModule)
	if pkg == "" || pkg != sdk || sdk != hostSDK {
		t.Fatalf("one tag wanted: go.mod requires %s %q and %s %q, %s/go.mod %s %q",
			pkgModule, pkg, sdkModule, sdk, hostDir, sdkModule, hostSDK)
	}
	var tools []string
	for _, tl := range cli.Tool {
		tools = append(tools, tl.Path)
	}
	if !reflect.DeepEqual(tools, []string{cliPackage}) {
		t.Errorf("go.mod tools = %q, want [%s]", tools, cliPackage)
	}
}

func TestReplacesFollowUpstream(t *testing.T) {
	cli := readGoMod(t, "go.mod")
	pkg := upstream(t, ".", pkgModule, required(cli, pkgModule))
	if got, want := remoteReplaces(cli), remoteReplaces(pkg); !reflect.DeepEqual(got, want) {
		t.Errorf("go.mod replaces %q, %s has %q", got, pkgModule, want)
	}
	upstream(t, ".", sdkModule, required(cli, sdkModule))

	host := readGoMod(t, filepath.Join(hostDir, "go.mod"))
	sdk := upstream(t, hostDir, sdkModule, required(host, sdkModule))
	if got, want := remoteReplaces(host), remoteReplaces(sdk); !reflect.DeepEqual(got, want) {
		t.Errorf("%s/go.mod replaces %q, %s has %q", hostDir, got, sdkModule, want)
	}
}
