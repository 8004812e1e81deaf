package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestParseFlags(t *testing.T) {
	cases := []struct {
		name string
		argv []string
		want flags
	}{
		{"engine address only", []string{"127.0.0.1:4000"}, flags{engineAddress: "127.0.0.1:4000"}},
		{"engine flags", []string{"--logtostderr", "-v=9", "--logflow", "--tracing", "tracing-host:1", "127.0.0.1:4000"},
			flags{verbose: 9, logToStderr: true, logFlow: true, engineAddress: "127.0.0.1:4000"}},
		{"single-dash flags and --v=", []string{"-logtostderr", "--v=3", "-logflow", "localhost:1"},
			flags{verbose: 3, logToStderr: true, logFlow: true, engineAddress: "localhost:1"}},
		{"separate values are not the engine address",
			[]string{"-root", "/proj", "--virtualenv", "venv", "-toolchain", "pip", "--typechecker", "mypy", "127.0.0.1:5"},
			flags{engineAddress: "127.0.0.1:5"}},
		{"flags with = and unknown flags are ignored", []string{"-root=/proj", "--tracing=x", "--unknown", "a:1"},
			flags{engineAddress: "a:1"}},
		{"last positional wins", []string{"first", "second"}, flags{engineAddress: "second"}},
		{"a value flag last eats nothing more", []string{"a:1", "--tracing"}, flags{engineAddress: "a:1"}},
		{"version stops parsing", []string{"--version", "a:1"}, flags{version: true}},
		{"single-dash version", []string{"-version"}, flags{version: true}},
		{"bad verbosity is 0", []string{"-v=x", "a:1"}, flags{engineAddress: "a:1"}},
		{"nothing", nil, flags{}},
		{"three dashes is not a known flag", []string{"---root", "a:1"}, flags{engineAddress: "a:1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := parseFlags(c.argv); got != c.want {
				t.Errorf("parseFlags(%q) = %+v, want %+v", c.argv, got, c.want)
			}
		})
	}
}

func TestSkipList(t *testing.T) {
	cases := map[string][]string{
		"":                   nil,
		"aws":                {"aws"},
		"aws,docker":         {"aws", "docker"},
		" aws , docker ,, ,": {"aws", "docker"},
		",":                  nil,
	}
	for in, want := range cases {
		var got []string
		for name, on := range skipList(in) {
			if !on {
				t.Errorf("skipList(%q)[%q] = false", in, name)
			}
			got = append(got, name)
		}
		sort.Strings(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("skipList(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPackageDependencies(t *testing.T) {
	out := []byte(`[
		{"resource": true, "name": "aws", "version": "7.1.0"},
		{"resource": true, "name": "docker", "version": "v4.5.0", "server": "https://plugins.example"},
		{"resource": true, "name": "random"},
		{"resource": true, "name": "terraform-provider", "version": "0.1.0",
		 "parameterization": {"name": "ns1", "version": "1.2.3", "value": "aGVsbG8="}}
	]`)
	deps, err := packageDependencies(out, skipList("docker"))
	if err != nil {
		t.Fatal(err)
	}
	type dep struct{ kind, name, version, server, param string }
	var got []dep
	for _, d := range deps {
		p := ""
		if d.Parameterization != nil {
			p = d.Parameterization.Name + "@" + d.Parameterization.Version + ":" + string(d.Parameterization.Value)
		}
		got = append(got, dep{d.Kind, d.Name, d.Version, d.Server, p})
	}
	want := []dep{
		{"resource", "aws", "v7.1.0", "", ""},
		{"resource", "random", "", "", ""},
		{"resource", "terraform-provider", "v0.1.0", "", "ns1@1.2.3:hello"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("packageDependencies:\n got %+v\nwant %+v", got, want)
	}

	plugins := pluginDependencies(deps)
	var names []string
	for _, p := range plugins {
		names = append(names, p.Kind+":"+p.Name+"@"+p.Version)
	}
	if want := []string{"resource:aws@v7.1.0", "resource:random@"}; !reflect.DeepEqual(names, want) {
		t.Errorf("pluginDependencies = %q, want %q (parameterized packages have no plugin)", names, want)
	}
}

func TestPackageDependenciesEmptyAndBroken(t *testing.T) {
	deps, err := packageDependencies([]byte("[]\n"), nil)
	if err != nil || len(deps) != 0 {
		t.Errorf("empty list: %v, %v", deps, err)
	}
	_, err = packageDependencies([]byte("Traceback (most recent call last)"), nil)
	if err == nil || !strings.Contains(err.Error(), `parsing plugin list "Traceback`) {
		t.Errorf("broken output: error %v, want one naming the output", err)
	}
}

// The discovery script itself, run by a real Python: which pulumi-plugin.json
// files it reports and how it names them.
func TestRequiredPluginsScript(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH")
	}
	site := t.TempDir()
	write := func(pkg, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(site, pkg), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(site, pkg, "pulumi-plugin.json"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pulumi_aws", `{"resource": true, "name": "aws", "version": "7.1.0"}`)
	write("pulumi_azure_native", `{"resource": true, "version": "2.0.0"}`) // no name: from the directory
	write("my_provider", `{"resource": true}`)                             // no pulumi_ prefix
	write("pulumi_policy", `{"resource": false, "name": "policy"}`)        // not a resource plugin
	write("pulumi_broken", `{not json`)
	write("pulumi_list", `[1, 2]`)
	if err := os.MkdirAll(filepath.Join(site, "pulumi_none"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The same directory twice on sys.path (once through a symlink) is reported once.
	link := filepath.Join(t.TempDir(), "site-link")
	if err := os.Symlink(site, link); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(python, "-c", requiredPluginsScript)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+site+string(os.PathListSeparator)+link, "PYTHONNOUSERSITE=1")
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	deps, err := packageDependencies(out, skipList("aws"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range deps {
		got = append(got, d.Name+"@"+d.Version)
	}
	// Packages outside the temporary site dirs (the machine's own Python) may add entries; only ours count.
	var ours []string
	for _, g := range got {
		switch strings.SplitN(g, "@", 2)[0] {
		case "aws", "azure-native", "my-provider", "policy", "broken", "list", "none":
			ours = append(ours, g)
		}
	}
	want := []string{"my-provider@", "azure-native@v2.0.0"} // sorted by directory within a sys.path entry
	if !reflect.DeepEqual(ours, want) {
		t.Errorf("discovered %q (all: %q), want %q", ours, got, want)
	}
	var raw []map[string]any
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, r := range raw {
		if r["name"] == "aws" {
			count++
		}
	}
	if count != 1 {
		t.Errorf("aws listed %d times before skipping, want once (symlinked sys.path entry): %s", count, out)
	}
}

func TestProgramArgs(t *testing.T) {
	info := &pulumirpc.ProgramInfo{RootDirectory: "/proj", ProgramDirectory: "/proj/src", EntryPoint: "main.py"}
	req := &pulumirpc.RunRequest{
		MonitorAddress: "127.0.0.1:1", Project: "p", Stack: "dev", Pwd: "/proj",
		Parallel: 16, DryRun: true, Args: []string{"extra1", "extra2"},
	}
	got := programArgs("/bin/exec", "127.0.0.1:2", req, info)
	want := []string{"-u", "/bin/exec",
		"--monitor", "127.0.0.1:1", "--engine", "127.0.0.1:2", "--project", "p", "--stack", "dev",
		"--pwd", "/proj", "--parallel", "16", "--dry_run", "true", "--root_directory", "/proj",
		"/proj/src/main.py", "extra1", "extra2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("programArgs:\n got %q\nwant %q", got, want)
	}

	req.Organization, req.DryRun, req.Args = "org", false, nil
	info.EntryPoint = ""
	got = programArgs("/bin/exec", "e:1", req, info)
	tail := []string{"--dry_run", "false", "--root_directory", "/proj", "--organization", "org", "/proj/src"}
	if !reflect.DeepEqual(got[len(got)-len(tail):], tail) {
		t.Errorf("programArgs with organization, default entry point: got %q, want it to end with %q", got, tail)
	}
}

func TestRunInfo(t *testing.T) {
	got := runInfo(&pulumirpc.RunRequest{Pwd: "/here"})
	if got.GetRootDirectory() != "/here" || got.GetProgramDirectory() != "/here" || got.GetEntryPoint() != "." {
		t.Errorf("runInfo without info = %v", got)
	}
	info := &pulumirpc.ProgramInfo{RootDirectory: "/r"}
	if runInfo(&pulumirpc.RunRequest{Pwd: "/here", Info: info}) != info {
		t.Error("runInfo does not return the request's own info")
	}
}

func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func TestProgramEnv(t *testing.T) {
	base := []string{"PATH=/usr/bin", "HOME=/root"}
	env, err := programEnv(base, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := envMap(env)
	if m["PULUMI_CONFIG"] != "{}" || m["PULUMI_CONFIG_SECRET_KEYS"] != "[]" {
		t.Errorf("no config: PULUMI_CONFIG=%q PULUMI_CONFIG_SECRET_KEYS=%q, want {} and [] (never null)",
			m["PULUMI_CONFIG"], m["PULUMI_CONFIG_SECRET_KEYS"])
	}
	if m["PATH"] != "/usr/bin" || m["HOME"] != "/root" || m["PYTHONUNBUFFERED"] != "1" {
		t.Errorf("env = %q", env)
	}
	if len(base) != 2 || cap(base) != 2 {
		t.Errorf("base changed: %q", base)
	}

	env, err = programEnv(base, map[string]string{"proj:password": "s3cr3t", "proj:name": `a "b"`},
		[]string{"proj:password"})
	if err != nil {
		t.Fatal(err)
	}
	m = envMap(env)
	var config map[string]string
	if err := json.Unmarshal([]byte(m["PULUMI_CONFIG"]), &config); err != nil {
		t.Fatal(err)
	}
	if config["proj:password"] != "s3cr3t" || config["proj:name"] != `a "b"` || len(config) != 2 {
		t.Errorf("PULUMI_CONFIG = %s", m["PULUMI_CONFIG"])
	}
	if m["PULUMI_CONFIG_SECRET_KEYS"] != `["proj:password"]` {
		t.Errorf("PULUMI_CONFIG_SECRET_KEYS = %s", m["PULUMI_CONFIG_SECRET_KEYS"])
	}
}

func TestPluginEnv(t *testing.T) {
	current := []string{"PATH=/usr/bin", "FROM=host"}
	env := envMap(pluginEnv(nil, current, ""))
	if env["FROM"] != "host" || env["PYTHONUNBUFFERED"] != "1" {
		t.Errorf("no engine env: %v", env)
	}
	env = envMap(pluginEnv([]string{"PATH=/bin", "FROM=engine", "PYTHONHOME=/x"}, current, "/venv"))
	if env["FROM"] != "engine" {
		t.Errorf("the engine's environment is not used: %v", env)
	}
	if env["VIRTUAL_ENV"] != "/venv" || !strings.HasPrefix(env["PATH"], "/venv/bin") {
		t.Errorf("virtualenv not activated: %v", env)
	}
	if _, ok := env["PYTHONHOME"]; ok {
		t.Errorf("PYTHONHOME kept in an activated virtualenv: %v", env)
	}
}

func TestToolchainOptions(t *testing.T) {
	info := func(opts map[string]any) *pulumirpc.ProgramInfo {
		s, err := structpb.NewStruct(opts)
		if err != nil {
			t.Fatal(err)
		}
		return &pulumirpc.ProgramInfo{RootDirectory: "/r", ProgramDirectory: "/r/p", Options: s}
	}
	opts, o, err := toolchainOptions(info(map[string]any{"toolchain": "PIP", "virtualenv": ".venv", "typechecker": "MyPy"}))
	if err != nil {
		t.Fatal(err)
	}
	want := toolchain.PythonOptions{Root: "/r", ProgramDir: "/r/p", Virtualenv: ".venv",
		Toolchain: toolchain.Pip, Typechecker: toolchain.TypeCheckerMypy}
	if opts != want || o.toolchain != "pip" || o.typechecker != "mypy" {
		t.Errorf("toolchainOptions = %+v %+v, want %+v", opts, o, want)
	}

	for name, tc := range map[string]any{"": toolchain.Auto, "auto": toolchain.Auto, "uv": toolchain.Uv, "poetry": toolchain.Poetry} {
		opts, _, err := toolchainOptions(info(map[string]any{"toolchain": name, "typechecker": "pyright"}))
		if err != nil || any(opts.Toolchain) != tc || opts.Typechecker != toolchain.TypeCheckerPyright {
			t.Errorf("toolchain %q: %+v, %v", name, opts, err)
		}
	}
	if _, _, err := toolchainOptions(info(map[string]any{"toolchain": "conda"})); err == nil ||
		err.Error() != `unsupported python toolchain "conda" (expected pip, uv or poetry)` {
		t.Errorf("toolchain conda: %v", err)
	}
	if _, _, err := toolchainOptions(info(map[string]any{"typechecker": "pytype"})); err == nil ||
		err.Error() != `unsupported python typechecker "pytype" (expected mypy or pyright)` {
		t.Errorf("typechecker pytype: %v", err)
	}

	opts, o, err = toolchainOptions(&pulumirpc.ProgramInfo{RootDirectory: "/r"})
	if err != nil || opts.ProgramDir != "/r" || opts.Toolchain != toolchain.Auto || o != (pythonOptions{}) {
		t.Errorf("no program directory, no options: %+v %+v %v", opts, o, err)
	}
	if opts, _, err := toolchainOptions(nil); err != nil || opts != (toolchain.PythonOptions{}) {
		t.Errorf("nil info: %+v %v", opts, err)
	}
}

func TestFindExecScript(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "bin", "pulumi-language-python")
	script := filepath.Join(dir, "bin", execScriptName)
	for _, f := range []string{self, script} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	noPath := func(string) (string, error) { return "", errors.New("not on PATH") }
	onPath := func(name string) (string, error) { return "/on/path/" + name, nil }

	if got, err := findExecScript(self, noPath); err != nil || got != script {
		t.Errorf("next to the host: %q, %v", got, err)
	}
	// A symlink to the host (e.g. from another bin dir) finds the script next to the real binary.
	link := filepath.Join(dir, "elsewhere", "pulumi-language-python")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, link); err != nil {
		t.Fatal(err)
	}
	if got, err := findExecScript(link, noPath); err != nil || got != script {
		t.Errorf("through a symlink: %q, %v", got, err)
	}
	if err := os.Remove(script); err != nil {
		t.Fatal(err)
	}
	if got, err := findExecScript(self, onPath); err != nil || got != "/on/path/"+execScriptName {
		t.Errorf("PATH fallback: %q, %v", got, err)
	}
	_, err := findExecScript(self, noPath)
	if err == nil || err.Error() != "could not find pulumi-language-python-exec next to the language host or on PATH" {
		t.Errorf("missing everywhere: %v", err)
	}
}

func TestRunResponseAndExitCode(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	run := func(script string) error { return exec.Command(sh, "-c", script).Run() }

	if r := runResponse(run("exit 0")); r.Error != "" || r.Bail {
		t.Errorf("exit 0: %v", r)
	}
	if r := runResponse(run("exit 32")); !r.Bail || r.Error != "" {
		t.Errorf("exit 32 (user-actionable, message already shown) must bail without error: %v", r)
	}
	if r := runResponse(run("exit 3")); r.Error != "Program exited with non-zero exit code: 3" || r.Bail {
		t.Errorf("exit 3: %v", r)
	}
	err = run("kill -9 $$")
	if code, ok := exitCode(err); !ok || code != 137 {
		t.Errorf("killed by SIGKILL: exitCode = %d, %v; want 137", code, ok)
	}
	if r := runResponse(err); r.Error != "Program exited with non-zero exit code: 137" {
		t.Errorf("SIGKILL: %v", r)
	}
	err = exec.Command(filepath.Join(t.TempDir(), "no-such-python")).Run()
	if _, ok := exitCode(err); ok {
		t.Errorf("a process that never started has an exit code: %v", err)
	}
	if r := runResponse(err); !strings.HasPrefix(r.Error, "Problem executing program (could not run language executor): ") {
		t.Errorf("not started: %v", r)
	}
}

func TestLockedSender(t *testing.T) {
	var mu sync.Mutex
	var got [][]byte
	inSend := 0
	w := lockedSender{&mu, func(b []byte) error {
		inSend++
		if inSend != 1 {
			t.Error("concurrent Send")
		}
		got = append(got, b)
		inSend--
		return nil
	}}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				if n, err := w.Write([]byte("line\n")); n != 5 || err != nil {
					t.Errorf("Write = %d, %v", n, err)
				}
			}
		}()
	}
	wg.Wait()
	if len(got) != 800 {
		t.Errorf("%d messages, want 800", len(got))
	}

	got = nil
	buf := []byte("first")
	if _, err := w.Write(buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXX")
	if string(got[0]) != "first" {
		t.Errorf("a message changed with the caller's buffer: %q", got[0])
	}

	failing := lockedSender{&mu, func([]byte) error { return errors.New("stream closed") }}
	if n, err := failing.Write([]byte("x")); n != 0 || err == nil {
		t.Errorf("failed Send: Write = %d, %v", n, err)
	}
}

// fakeVenv makes a virtualenv whose python records its arguments and
// environment and prints $FAKE_STDOUT, exiting with $FAKE_EXIT.
func fakeVenv(t *testing.T) (venv, record string) {
	t.Helper()
	venv = filepath.Join(t.TempDir(), "venv")
	record = filepath.Join(t.TempDir(), "record")
	if err := os.MkdirAll(filepath.Join(venv, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	python := `#!/bin/sh
for a in "$@"; do printf '%s\0' "$a"; done > "$FAKE_RECORD.args"
env > "$FAKE_RECORD.env"
pwd > "$FAKE_RECORD.pwd"
[ -n "$FAKE_STDOUT" ] && cat "$FAKE_STDOUT"
exit "${FAKE_EXIT:-0}"
`
	if err := os.WriteFile(filepath.Join(venv, "bin", "python"), []byte(python), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_RECORD", record)
	return venv, record
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// readArgs reads the NUL-terminated argv the fake python recorded.
func readArgs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

func pipInfo(t *testing.T, root, venv string) *pulumirpc.ProgramInfo {
	t.Helper()
	opts, err := structpb.NewStruct(map[string]any{"toolchain": "pip", "virtualenv": venv})
	if err != nil {
		t.Fatal(err)
	}
	return &pulumirpc.ProgramInfo{RootDirectory: root, ProgramDirectory: root, EntryPoint: ".", Options: opts}
}

// Run, end to end against a fake interpreter: the argv and environment the
// program gets, and how its exit status is reported.
func TestRunWithFakePython(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	venv, record := fakeVenv(t)
	bin := t.TempDir()
	script := filepath.Join(bin, execScriptName)
	if err := os.WriteFile(script, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	project := t.TempDir()

	h := &host{engineAddress: "127.0.0.1:7"}
	req := &pulumirpc.RunRequest{
		MonitorAddress: "127.0.0.1:8", Project: "proj", Stack: "dev", Pwd: project, Parallel: 4,
		Config: map[string]string{"proj:k": "v"}, ConfigSecretKeys: []string{"proj:k"},
		Info: pipInfo(t, project, venv),
	}
	resp, err := h.Run(context.Background(), req)
	if err != nil || resp.Error != "" || resp.Bail {
		t.Fatalf("Run = %v, %v", resp, err)
	}
	if got, want := readArgs(t, record+".args"), programArgs(script, "127.0.0.1:7", req, req.Info); !reflect.DeepEqual(got, want) {
		t.Errorf("program argv:\n got %q\nwant %q", got, want)
	}
	env := envMap(readLines(t, record+".env"))
	if env["PULUMI_CONFIG"] != `{"proj:k":"v"}` || env["PULUMI_CONFIG_SECRET_KEYS"] != `["proj:k"]` ||
		env["VIRTUAL_ENV"] != venv || env["PYTHONUNBUFFERED"] != "1" {
		t.Errorf("program environment: %v", env)
	}
	if got := readLines(t, record+".pwd"); got[0] != project {
		t.Errorf("program cwd %q, want %q", got[0], project)
	}

	t.Setenv("FAKE_EXIT", "32")
	if resp, err := h.Run(context.Background(), req); err != nil || !resp.Bail {
		t.Errorf("exit 32: %v, %v", resp, err)
	}
	t.Setenv("FAKE_EXIT", "2")
	if resp, err := h.Run(context.Background(), req); err != nil || resp.Error != "Program exited with non-zero exit code: 2" {
		t.Errorf("exit 2: %v, %v", resp, err)
	}

	req.Info = pipInfo(t, project, filepath.Join(project, "no-venv"))
	if resp, err := h.Run(context.Background(), req); err != nil || !strings.Contains(resp.Error, "no-venv") {
		t.Errorf("missing virtualenv: %v, %v (want an error naming it)", resp, err)
	}
}

// GetRequiredPlugins, end to end against a fake interpreter printing a plugin
// list, with PULUMI_PYTHON_SKIP_PLUGINS.
func TestRequiredPluginsWithFakePython(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	venv, record := fakeVenv(t)
	list := filepath.Join(t.TempDir(), "plugins.json")
	if err := os.WriteFile(list, []byte(`[{"resource": true, "name": "aws", "version": "7.0.0"},
		{"resource": true, "name": "docker", "version": "4.0.0"},
		{"resource": true, "name": "command", "version": "1.0.0"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_STDOUT", list)
	t.Setenv(skipPluginsEnv, "aws, docker")
	project := t.TempDir()

	h := &host{}
	resp, err := h.GetRequiredPlugins(context.Background(),
		&pulumirpc.GetRequiredPluginsRequest{Info: pipInfo(t, project, venv)})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Plugins) != 1 || resp.Plugins[0].Name != "command" || resp.Plugins[0].Version != "v1.0.0" {
		t.Errorf("plugins = %v, want only command v1.0.0", resp.Plugins)
	}
	if args := readArgs(t, record+".args"); len(args) != 2 || args[0] != "-c" || args[1] != requiredPluginsScript {
		t.Errorf("python was run with %q, want -c and the discovery script", args)
	}

	t.Setenv("FAKE_EXIT", "1")
	_, err = h.GetRequiredPackages(context.Background(),
		&pulumirpc.GetRequiredPackagesRequest{Info: pipInfo(t, project, venv)})
	if err == nil || !strings.Contains(err.Error(), "listing pulumi plugins of the python environment") {
		t.Errorf("failing python: %v", err)
	}
}
