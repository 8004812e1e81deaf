#!/usr/bin/env bash
# Build the Pulumi CLI and a Python language host from the Go module proxy and
# install them into <repo>/.tools/bin. Idempotent: a verified cached build is
# reused (about a second); otherwise the first build takes several minutes.
#
#   bash scripts/install-pulumi.sh        # from any directory
#   . scripts/pulumi-env.sh               # then: pulumi version
#
# Caches live outside the repo (CI runs in a fresh clone on the same machine):
#   ${LAKEHOUSE_CACHE:-$HOME/.cache/lakehouse-platform}/go/{mod,build}   Go module + build caches
#   .../pulumi/$PULUMI_VERSION/bin       built binaries + SHA256SUMS + RECIPE
#   .../pulumi/$PULUMI_VERSION/build     generated wrapper Go module
#
# Installed into .tools/bin:
#   pulumi                          CLI (github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)
#   pulumi-language-python          Python language host (see NOTE below)
#   pulumi-language-python-exec     program launcher script   (from the sdk/v3 module zip)
#   pulumi-resource-pulumi-python   dynamic-provider launcher (from the sdk/v3 module zip)
#
# NOTE: upstream's pulumi-language-python is its own Go module
# (github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3) and the
# module proxy reachable here answers "This module version is not available"
# (403) for it at every version, so this script generates and builds a small
# language host of its own against sdk/v3 (LanguageRuntime gRPC protocol +
# sdk/v3/python/toolchain). pulumi-analyzer-policy-python is not shipped in
# the sdk/v3 module at this tag and is not needed: when a python language host
# is installed the CLI runs Python policy packs through its RunPlugin RPC.
set -euo pipefail

# The one Pulumi version knob. pkg/v3 v3.272.0 (matching the pinned Python SDK
# pulumi==3.272.0) is refused by the module proxy ("This module version is not
# available"), v3.274.1 is served for both pkg/v3 and sdk/v3.
PULUMI_VERSION="v3.274.1"

SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_ROOT="$(cd -- "$SCRIPT_DIR/.." && pwd -P)"
CACHE="${LAKEHOUSE_CACHE:-$HOME/.cache/lakehouse-platform}"
TOOLS_BIN="$REPO_ROOT/.tools/bin"
VERSION_DIR="$CACHE/pulumi/$PULUMI_VERSION"
OUT_BIN="$VERSION_DIR/bin"
BUILD_DIR="$VERSION_DIR/build"

BINARIES=(pulumi pulumi-language-python)
SCRIPTS=(pulumi-language-python-exec pulumi-resource-pulumi-python)

export GOMODCACHE="$CACHE/go/mod"
export GOCACHE="$CACHE/go/build"
export GOPATH="$CACHE/go/path"
export GOFLAGS="-modcacherw -buildvcs=false"
export CGO_ENABLED=0
unset GOOS GOARCH GOWORK 2>/dev/null || true
export GOWORK=off

LDFLAGS="-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION"

START=$SECONDS
step() { printf '==> [%4ss] %s\n' "$((SECONDS - START))" "$*"; }
note() { printf '    %s\n' "$*"; }
die() { printf 'install-pulumi: error: %s\n' "$*" >&2; exit 1; }

# --------------------------------------------------------------------------
# Generated sources
# --------------------------------------------------------------------------

# Source of the Python language host (package main, built as
# pulumi-language-python). Kept in this script so the whole recipe is one file.
langhost_source() {
  cat <<'GO_EOF'
// pulumi-language-python (lakehouse build).
//
// A small Python language host for the Pulumi CLI, generated and built by
// scripts/install-pulumi.sh. The upstream host lives in its own Go module
// (github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3) which
// the Go module proxy reachable from this project does not serve, so the
// project builds this host instead. It speaks the LanguageRuntime gRPC
// protocol from github.com/pulumi/pulumi/sdk/v3/proto/go and uses the SDK's
// own Python toolchain helpers (sdk/v3/python/toolchain) to find the
// interpreter / virtualenv. Programs are launched through the SDK's
// pulumi-language-python-exec script, policy packs and Python plugins are
// launched through RunPlugin.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/logging"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/version"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Exit code used by pulumi-language-python-exec after it has already shown the
// user an actionable error message.
const userActionableExitCode = 32

// Python snippet that lists the Pulumi resource plugins required by the
// packages importable in the selected environment: every package directory on
// sys.path that ships a pulumi-plugin.json with "resource": true.
const requiredPluginsScript = `
import glob, json, os, sys
out, seen = [], set()
for base in sys.path:
    if not base or not os.path.isdir(base):
        continue
    for path in sorted(glob.glob(os.path.join(base, "*", "pulumi-plugin.json"))):
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except Exception:
            continue
        if not isinstance(data, dict) or not data.get("resource"):
            continue
        if not data.get("name"):
            pkg = os.path.basename(os.path.dirname(path))
            data["name"] = pkg[len("pulumi_"):] if pkg.startswith("pulumi_") else pkg
            data["name"] = data["name"].replace("_", "-")
        out.append(data)
print(json.dumps(out))
`

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	engineAddress string
}

type pythonOptions struct {
	virtualenv  string
	toolchain   string
	typechecker string
}

func optionsOf(info *pulumirpc.ProgramInfo) pythonOptions {
	var o pythonOptions
	if info == nil || info.GetOptions() == nil {
		return o
	}
	m := info.GetOptions().AsMap()
	str := func(k string) string {
		if v, ok := m[k]; ok && v != nil {
			return fmt.Sprintf("%v", v)
		}
		return ""
	}
	o.virtualenv = str("virtualenv")
	o.toolchain = strings.ToLower(str("toolchain"))
	o.typechecker = strings.ToLower(str("typechecker"))
	return o
}

func resolveToolchain(info *pulumirpc.ProgramInfo) (toolchain.Toolchain, pythonOptions, error) {
	o := optionsOf(info)
	root, programDir := "", ""
	if info != nil {
		root, programDir = info.GetRootDirectory(), info.GetProgramDirectory()
	}
	if programDir == "" {
		programDir = root
	}
	opts := toolchain.PythonOptions{Root: root, ProgramDir: programDir, Virtualenv: o.virtualenv}
	switch o.toolchain {
	case "", "auto":
		opts.Toolchain = toolchain.Auto
	case "pip":
		opts.Toolchain = toolchain.Pip
	case "uv":
		opts.Toolchain = toolchain.Uv
	case "poetry":
		opts.Toolchain = toolchain.Poetry
	default:
		return nil, o, fmt.Errorf("unsupported python toolchain %q (expected pip, uv or poetry)", o.toolchain)
	}
	switch o.typechecker {
	case "", "none":
	case "mypy":
		opts.Typechecker = toolchain.TypeCheckerMypy
	case "pyright":
		opts.Typechecker = toolchain.TypeCheckerPyright
	default:
		return nil, o, fmt.Errorf("unsupported python typechecker %q (expected mypy or pyright)", o.typechecker)
	}
	tc, err := toolchain.ResolveToolchain(opts)
	return tc, o, err
}

func envOrCurrent(cmd *exec.Cmd) []string {
	if cmd.Env != nil {
		return cmd.Env
	}
	return os.Environ()
}

// execScript locates pulumi-language-python-exec: next to this binary first,
// then on PATH.
func execScript() (string, error) {
	const name = "pulumi-language-python-exec"
	if self, err := os.Executable(); err == nil {
		if resolved, err := filepath.EvalSymlinks(self); err == nil {
			self = resolved
		}
		candidate := filepath.Join(filepath.Dir(self), name)
		if _, err := os.Stat(candidate); err == nil {
			return candidate, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("could not find %s next to the language host or on PATH", name)
	}
	return p, nil
}

func exitCode(err error) (int, bool) {
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), true
		}
		return exitErr.ExitCode(), true
	}
	return 0, false
}

func (h *host) Handshake(ctx context.Context,
	req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	if req.GetEngineAddress() != "" {
		h.engineAddress = req.GetEngineAddress()
	}
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(ctx context.Context, _ *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: strings.TrimPrefix(version.Version, "v")}, nil
}

func (h *host) RuntimeOptionsPrompts(ctx context.Context,
	req *pulumirpc.RuntimeOptionsRequest,
) (*pulumirpc.RuntimeOptionsResponse, error) {
	return &pulumirpc.RuntimeOptionsResponse{}, nil
}

type pluginJSON struct {
	Name             string `json:"name"`
	Version          string `json:"version"`
	Server           string `json:"server"`
	Parameterization *struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Value   []byte `json:"value"`
	} `json:"parameterization"`
}

func (h *host) requiredPackages(ctx context.Context,
	info *pulumirpc.ProgramInfo,
) ([]*pulumirpc.PackageDependency, error) {
	tc, _, err := resolveToolchain(info)
	if err != nil {
		return nil, err
	}
	if err := tc.ValidateVenv(ctx); err != nil {
		return nil, err
	}
	cmd, err := tc.Command(ctx, "-c", requiredPluginsScript)
	if err != nil {
		return nil, err
	}
	cmd.Dir = info.GetProgramDirectory()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing pulumi plugins of the python environment (%s): %w: %s",
			cmd.Path, err, strings.TrimSpace(stderr.String()))
	}
	var plugins []pluginJSON
	if err := json.Unmarshal(out, &plugins); err != nil {
		return nil, fmt.Errorf("parsing plugin list %q: %w", string(out), err)
	}
	deps := make([]*pulumirpc.PackageDependency, 0, len(plugins))
	// PULUMI_PYTHON_SKIP_PLUGINS (comma-separated names): provider packages installed in the
	// venv that a stack never uses and that cannot be obtained here (docker, aws on the native
	// stack), so the engine does not ask for them.
	skip := map[string]bool{}
	for _, name := range strings.Split(os.Getenv("PULUMI_PYTHON_SKIP_PLUGINS"), ",") {
		if name = strings.TrimSpace(name); name != "" {
			skip[name] = true
		}
	}
	for _, p := range plugins {
		if skip[p.Name] {
			logging.V(5).Infof("python host: skipping plugin %s (PULUMI_PYTHON_SKIP_PLUGINS)", p.Name)
			continue
		}
		v := p.Version
		if v != "" && !strings.HasPrefix(v, "v") {
			v = "v" + v
		}
		dep := &pulumirpc.PackageDependency{Kind: "resource", Name: p.Name, Version: v, Server: p.Server}
		if p.Parameterization != nil {
			dep.Parameterization = &pulumirpc.PackageParameterization{
				Name:    p.Parameterization.Name,
				Version: p.Parameterization.Version,
				Value:   p.Parameterization.Value,
			}
		}
		deps = append(deps, dep)
	}
	logging.V(5).Infof("python host: required packages: %v", deps)
	return deps, nil
}

func (h *host) GetRequiredPackages(ctx context.Context,
	req *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	deps, err := h.requiredPackages(ctx, req.GetInfo())
	if err != nil {
		return nil, err
	}
	return &pulumirpc.GetRequiredPackagesResponse{Packages: deps}, nil
}

func (h *host) GetRequiredPlugins(ctx context.Context,
	req *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	deps, err := h.requiredPackages(ctx, req.GetInfo())
	if err != nil {
		return nil, err
	}
	plugins := make([]*pulumirpc.PluginDependency, 0, len(deps))
	for _, d := range deps {
		if d.Parameterization != nil {
			continue
		}
		plugins = append(plugins, &pulumirpc.PluginDependency{
			Name: d.Name, Kind: d.Kind, Version: d.Version, Server: d.Server,
		})
	}
	return &pulumirpc.GetRequiredPluginsResponse{Plugins: plugins}, nil
}

func (h *host) typecheck(ctx context.Context, tc toolchain.Toolchain, o pythonOptions, dir string) (bool, error) {
	if o.typechecker == "" || o.typechecker == "none" {
		return true, nil
	}
	var cmd *exec.Cmd
	var err error
	if o.typechecker == "mypy" {
		cmd, err = tc.ModuleCommand(ctx, "mypy", ".")
	} else {
		cmd, err = tc.ModuleCommand(ctx, "pyright")
	}
	if err != nil {
		return false, err
	}
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		if _, ok := exitCode(err); ok {
			fmt.Fprintf(os.Stderr, "%s type checking failed\n", o.typechecker)
			return false, nil
		}
		return false, fmt.Errorf("running %s: %w", o.typechecker, err)
	}
	return true, nil
}

func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	if info == nil {
		info = &pulumirpc.ProgramInfo{RootDirectory: req.GetPwd(), ProgramDirectory: req.GetPwd(), EntryPoint: "."}
	}
	tc, o, err := resolveToolchain(info)
	if err != nil {
		return nil, err
	}
	if err := tc.ValidateVenv(ctx); err != nil {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	script, err := execScript()
	if err != nil {
		return nil, err
	}

	programDir := info.GetProgramDirectory()
	if ok, err := h.typecheck(ctx, tc, o, programDir); err != nil {
		return nil, err
	} else if !ok {
		return &pulumirpc.RunResponse{Bail: true}, nil
	}

	entry := info.GetEntryPoint()
	if entry == "" {
		entry = "."
	}
	program := filepath.Join(programDir, entry)

	args := []string{"-u", script,
		"--monitor", req.GetMonitorAddress(),
		"--engine", h.engineAddress,
		"--project", req.GetProject(),
		"--stack", req.GetStack(),
		"--pwd", req.GetPwd(),
		"--parallel", strconv.Itoa(int(req.GetParallel())),
		"--dry_run", strconv.FormatBool(req.GetDryRun()),
		"--root_directory", info.GetRootDirectory(),
	}
	if req.GetOrganization() != "" {
		args = append(args, "--organization", req.GetOrganization())
	}
	args = append(args, program)
	args = append(args, req.GetArgs()...)

	cmd, err := tc.Command(ctx, args...)
	if err != nil {
		return nil, err
	}
	configMap := req.GetConfig()
	if configMap == nil {
		configMap = map[string]string{} // the SDK expects a JSON object, not null
	}
	config, err := json.Marshal(configMap)
	if err != nil {
		return nil, err
	}
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	secretKeysJSON, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, err
	}
	cmd.Env = append(envOrCurrent(cmd),
		"PULUMI_CONFIG="+string(config),
		"PULUMI_CONFIG_SECRET_KEYS="+string(secretKeysJSON),
		"PYTHONUNBUFFERED=1",
	)
	cmd.Dir = req.GetPwd()
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	logging.V(5).Infof("python host: running %s %v", cmd.Path, cmd.Args)

	if err := cmd.Run(); err != nil {
		if code, ok := exitCode(err); ok {
			if code == userActionableExitCode {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{Error: fmt.Sprintf("Program exited with non-zero exit code: %d", code)}, nil
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("Problem executing program (could not run language executor): %v", err)}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

// lockedSender serialises Send calls on a gRPC server stream (Send is not
// safe for concurrent use and stdout/stderr are copied concurrently).
type lockedSender struct {
	mu   *sync.Mutex
	send func([]byte) error
}

func (w lockedSender) Write(p []byte) (int, error) {
	buf := append([]byte(nil), p...)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.send(buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (h *host) InstallDependencies(req *pulumirpc.InstallDependenciesRequest,
	server pulumirpc.LanguageRuntime_InstallDependenciesServer,
) error {
	ctx := server.Context()
	info := req.GetInfo()
	if info == nil {
		info = &pulumirpc.ProgramInfo{RootDirectory: req.GetDirectory(), ProgramDirectory: req.GetDirectory()}
	}
	tc, _, err := resolveToolchain(info)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	stdout := lockedSender{&mu, func(b []byte) error {
		return server.Send(&pulumirpc.InstallDependenciesResponse{Stdout: b})
	}}
	stderr := lockedSender{&mu, func(b []byte) error {
		return server.Send(&pulumirpc.InstallDependenciesResponse{Stderr: b})
	}}
	dir := info.GetProgramDirectory()
	if err := tc.InstallDependencies(ctx, dir, req.GetUseLanguageVersionTools(), true, stdout, stderr); err != nil {
		return err
	}
	if req.GetIsPlugin() {
		return tc.InstallPackage(ctx, dir, req.GetUseLanguageVersionTools(), true, stdout, stderr)
	}
	return nil
}

func (h *host) About(ctx context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	tc, o, err := resolveToolchain(req.GetInfo())
	if err != nil {
		return nil, err
	}
	about, err := tc.About(ctx)
	if err != nil {
		return nil, err
	}
	meta := map[string]string{"toolchain": o.toolchain, "host": "lakehouse pulumi-language-python"}
	if about.ToolchainVersion.String() != "0.0.0" {
		meta["toolchainVersion"] = about.ToolchainVersion.String()
	}
	if venv, err := tc.VirtualEnvPath(ctx); err == nil && venv != "" {
		meta["virtualenv"] = venv
	}
	return &pulumirpc.AboutResponse{
		Executable: about.PythonExecutable,
		Version:    about.PythonVersion.String(),
		Metadata:   meta,
	}, nil
}

func (h *host) GetProgramDependencies(ctx context.Context,
	req *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	tc, _, err := resolveToolchain(req.GetInfo())
	if err != nil {
		return nil, err
	}
	pkgs, err := tc.ListPackages(ctx, req.GetTransitiveDependencies())
	if err != nil {
		return nil, err
	}
	deps := make([]*pulumirpc.DependencyInfo, 0, len(pkgs))
	for _, p := range pkgs {
		deps = append(deps, &pulumirpc.DependencyInfo{Name: p.Name, Version: p.Version})
	}
	return &pulumirpc.GetProgramDependenciesResponse{Dependencies: deps}, nil
}

// RunPlugin runs a plugin written in Python (a policy pack with
// PulumiPolicy.yaml, or a provider/tool with PulumiPlugin.yaml): the plugin
// directory is executed as a script (its __main__.py) with the engine's args.
func (h *host) RunPlugin(req *pulumirpc.RunPluginRequest,
	server pulumirpc.LanguageRuntime_RunPluginServer,
) error {
	ctx := server.Context()
	info := req.GetInfo()
	if info == nil {
		return status.Error(codes.InvalidArgument, "RunPlugin: missing program info")
	}
	tc, _, err := resolveToolchain(info)
	if err != nil {
		return err
	}
	if err := tc.ValidateVenv(ctx); err != nil {
		return err
	}
	programDir := info.GetProgramDirectory()
	entry := info.GetEntryPoint()
	if entry == "" {
		entry = "."
	}
	args := append([]string{"-u", filepath.Join(programDir, entry)}, req.GetArgs()...)
	cmd, err := tc.Command(ctx, args...)
	if err != nil {
		return err
	}
	environ := req.GetEnv()
	if len(environ) == 0 {
		environ = os.Environ()
	}
	if venv, err := tc.VirtualEnvPath(ctx); err == nil && venv != "" {
		environ = toolchain.ActivateVirtualEnv(environ, venv)
	}
	cmd.Env = append(environ, "PYTHONUNBUFFERED=1")
	cmd.Dir = req.GetPwd()
	if cmd.Dir == "" {
		cmd.Dir = programDir
	}

	var mu sync.Mutex
	cmd.Stdout = lockedSender{&mu, func(b []byte) error {
		return server.Send(&pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stdout{Stdout: b}})
	}}
	cmd.Stderr = lockedSender{&mu, func(b []byte) error {
		return server.Send(&pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stderr{Stderr: b}})
	}}
	logging.V(5).Infof("python host: running plugin %s %v in %s", cmd.Path, cmd.Args, cmd.Dir)

	code := 0
	if err := cmd.Run(); err != nil {
		c, ok := exitCode(err)
		if !ok {
			return fmt.Errorf("running python plugin %s: %w", programDir, err)
		}
		code = c
	}
	mu.Lock()
	defer mu.Unlock()
	return server.Send(&pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: int32(code)}})
}

func main() {
	// Arguments from the engine: [--logtostderr] [-v=N] [--logflow] [--tracing X] [-root=X] ... ENGINE_ADDRESS
	var positional []string
	verbose, logToStderr, logFlow := 0, false, false
	argv := os.Args[1:]
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--version" || a == "-version":
			fmt.Println(version.Version)
			return
		case a == "--logtostderr" || a == "-logtostderr":
			logToStderr = true
		case a == "--logflow" || a == "-logflow":
			logFlow = true
		case strings.HasPrefix(a, "-v=") || strings.HasPrefix(a, "--v="):
			verbose, _ = strconv.Atoi(a[strings.Index(a, "=")+1:])
		case a == "--tracing" || a == "-tracing" || a == "-root" || a == "--root" ||
			a == "-virtualenv" || a == "--virtualenv" || a == "-toolchain" || a == "--toolchain" ||
			a == "-typechecker" || a == "--typechecker":
			i++ // flag with a separate value: skip it
		case strings.HasPrefix(a, "-"):
			// other flags (-root=..., --tracing=..., ...) are accepted and ignored
		default:
			positional = append(positional, a)
		}
	}
	logging.InitLogging(logToStderr, verbose, logFlow)

	h := &host{}
	if len(positional) > 0 {
		h.engineAddress = positional[len(positional)-1]
	}

	cancel := make(chan bool)
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: cancel,
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, h)
			return nil
		},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "fatal: could not start language host RPC server: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "fatal: language host RPC server stopped: %v\n", err)
		os.Exit(1)
	}
}
GO_EOF
}

# Hash of everything that determines the build output; a cached build whose
# RECIPE differs is rebuilt.
recipe_hash() {
  {
    echo "recipe-format 1"
    echo "$PULUMI_VERSION"
    echo "$LDFLAGS"
    echo "CGO_ENABLED=$CGO_ENABLED"
    printf '%s\n' "${BINARIES[@]}" "${SCRIPTS[@]}"
    langhost_source
  } | sha256sum | cut -d' ' -f1
}

# --------------------------------------------------------------------------
# Cache verification and installation
# --------------------------------------------------------------------------

cache_is_valid() {
  local recipe="$1" f
  [[ -f "$OUT_BIN/SHA256SUMS" && -f "$OUT_BIN/RECIPE" ]] || return 1
  [[ "$(cat "$OUT_BIN/RECIPE")" == "$recipe" ]] || { note "cached build recipe changed"; return 1; }
  for f in "${BINARIES[@]}" "${SCRIPTS[@]}"; do
    grep -q "  $f\$" "$OUT_BIN/SHA256SUMS" || { note "cached build lacks $f"; return 1; }
  done
  (cd "$OUT_BIN" && sha256sum --quiet --strict -c SHA256SUMS >/dev/null 2>&1) || {
    note "cached binaries in $OUT_BIN do not match SHA256SUMS"
    return 1
  }
}

# Hardlink (or copy) every file listed in SHA256SUMS into .tools/bin; files
# already identical are left alone. Replacement is atomic (rename), so a
# running pulumi is not disturbed.
install_into_tools() {
  local f changed=0
  mkdir -p "$TOOLS_BIN"
  while read -r _ f; do
    f="${f#\*}"
    if [[ -e "$TOOLS_BIN/$f" ]] && { [[ "$TOOLS_BIN/$f" -ef "$OUT_BIN/$f" ]] || cmp -s "$TOOLS_BIN/$f" "$OUT_BIN/$f"; }; then
      continue
    fi
    rm -f "$TOOLS_BIN/.$f.tmp"
    ln "$OUT_BIN/$f" "$TOOLS_BIN/.$f.tmp" 2>/dev/null || cp "$OUT_BIN/$f" "$TOOLS_BIN/.$f.tmp"
    chmod 0755 "$TOOLS_BIN/.$f.tmp"
    mv -f "$TOOLS_BIN/.$f.tmp" "$TOOLS_BIN/$f"
    changed=$((changed + 1))
  done < "$OUT_BIN/SHA256SUMS"
  if ((changed)); then
    step "installed $changed file(s) into $TOOLS_BIN"
  else
    step "$TOOLS_BIN already up to date"
  fi
}

# --------------------------------------------------------------------------
# Build
# --------------------------------------------------------------------------

# Directory of a module version in the module cache (downloads it if needed).
module_dir() {
  local json dir
  if ! json="$(go mod download -json "$1" 2>&1)"; then
    printf '%s\n' "$json" >&2
    die "could not download $1 from the Go module proxy (GOPROXY=$(go env GOPROXY))"
  fi
  dir="$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' | head -n1)"
  [[ -n "$dir" && -d "$dir" ]] || die "no module directory for $1 in: $json"
  printf '%s\n' "$dir"
}

# Non-local replace directives of a go.mod, as single-line 'replace' statements.
remote_replaces() {
  awk '
    /^replace[[:space:]]*\($/ { inblock = 1; next }
    inblock && /^\)/          { inblock = 0; next }
    inblock                   { line = $0 }
    !inblock && /^replace[[:space:]]/ { line = $0; sub(/^replace[[:space:]]+/, "", line) }
    line != "" {
      n = split(line, parts, "=>"); target = parts[2]; gsub(/^[[:space:]]+|[[:space:]]+$/, "", target)
      if (target !~ /^(\.|\/)/) { gsub(/^[[:space:]]+|[[:space:]]+$/, "", line); print "replace " line }
      line = ""
    }' "$1"
}

build_all() {
  local recipe="$1" pkg_dir sdk_dir go_directive tmp f src ticker
  command -v go >/dev/null 2>&1 || die "go is not on PATH (Go >= 1.26 is needed to build pulumi)"
  command -v sha256sum >/dev/null 2>&1 || die "sha256sum is not on PATH"
  step "building pulumi $PULUMI_VERSION from the Go module proxy ($(go env GOVERSION), cache $CACHE)"

  step "resolving github.com/pulumi/pulumi/{pkg,sdk}/v3@$PULUMI_VERSION"
  pkg_dir="$(module_dir "github.com/pulumi/pulumi/pkg/v3@$PULUMI_VERSION")"
  sdk_dir="$(module_dir "github.com/pulumi/pulumi/sdk/v3@$PULUMI_VERSION")"
  note "pkg: $pkg_dir"
  note "sdk: $sdk_dir"

  step "generating wrapper module in $BUILD_DIR"
  mkdir -p "$BUILD_DIR/pulumi-language-python"
  go_directive="$(awk '$1 == "go" { print $2; exit }' "$pkg_dir/go.mod")"
  {
    echo "// Generated by scripts/install-pulumi.sh -- do not edit."
    echo "module lakehouse.local/pulumi-tools"
    echo
    echo "go ${go_directive:-1.26}"
    echo
    echo "require ("
    echo "	github.com/pulumi/pulumi/pkg/v3 $PULUMI_VERSION"
    echo "	github.com/pulumi/pulumi/sdk/v3 $PULUMI_VERSION"
    echo ")"
    echo
    # Replace directives only apply inside their own module; copy pkg/v3's
    # non-local ones (upstream builds the CLI with pkg as main module).
    remote_replaces "$pkg_dir/go.mod"
  } > "$BUILD_DIR/go.mod"
  cat > "$BUILD_DIR/tools.go" <<'GO_EOF'
//go:build tools

// Generated by scripts/install-pulumi.sh: keeps the CLI's main package in the module graph.
package tools

import _ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
GO_EOF
  langhost_source > "$BUILD_DIR/pulumi-language-python/main.go"

  step "downloading Go modules (go mod tidy; cold: about a minute)"
  (cd "$BUILD_DIR" && go mod tidy 2>&1 | sed -u 's/^/    /') || die "go mod tidy failed in $BUILD_DIR"
  for f in pkg sdk; do
    local got
    got="$(cd "$BUILD_DIR" && go list -m -f '{{.Version}}' "github.com/pulumi/pulumi/$f/v3")"
    [[ "$got" == "$PULUMI_VERSION" ]] || die "module graph selected github.com/pulumi/pulumi/$f/v3 $got, wanted $PULUMI_VERSION"
  done

  tmp="$VERSION_DIR/bin.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  step "building pulumi CLI $PULUMI_VERSION + pulumi-language-python (first run takes several minutes)"
  # progress ticker; its sleep must not hold the output pipe or the lock (fd 9)
  ( exec 9>&-; while sleep 60 </dev/null >/dev/null 2>&1; do step "... still building"; done ) &
  ticker=$!
  if ! (cd "$BUILD_DIR" && go build -trimpath -ldflags "$LDFLAGS" -o "$tmp/" \
        github.com/pulumi/pulumi/pkg/v3/cmd/pulumi ./pulumi-language-python); then
    kill "$ticker" 2>/dev/null || true
    rm -rf "$tmp"
    die "go build failed"
  fi
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true

  step "copying helper scripts from the sdk/v3 module"
  for f in "${SCRIPTS[@]}" pulumi-analyzer-policy-python; do
    src="$(find "$sdk_dir/python" -type f -name "$f" -not -path '*/testdata/*' | head -n1)"
    if [[ -z "$src" ]]; then
      if [[ "$f" == pulumi-analyzer-policy-python ]]; then
        note "$f: not in sdk/v3@$PULUMI_VERSION (not needed: policy packs run via the language host)"
        continue
      fi
      rm -rf "$tmp"
      die "$f not found under $sdk_dir/python"
    fi
    cp "$src" "$tmp/$f"
    chmod 0755 "$tmp/$f"
    note "$f <- ${src#"$sdk_dir/"}"
  done

  "$tmp/pulumi" version | grep -qx "$PULUMI_VERSION" || { rm -rf "$tmp"; die "built pulumi does not report $PULUMI_VERSION"; }

  (cd "$tmp" && sha256sum -- * > SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
  printf '%s\n' "$recipe" > "$tmp/RECIPE"
  rm -rf "$OUT_BIN.old"
  [[ -d "$OUT_BIN" ]] && mv "$OUT_BIN" "$OUT_BIN.old"
  mv "$tmp" "$OUT_BIN"
  rm -rf "$OUT_BIN.old"
  step "built into $OUT_BIN"
}

# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

main() {
  mkdir -p "$CACHE/pulumi"
  exec 9>"$CACHE/pulumi/.install.lock"
  flock 9   # one install/build at a time per cache

  local recipe
  recipe="$(recipe_hash)"
  if cache_is_valid "$recipe"; then
    step "pulumi $PULUMI_VERSION already built and verified (sha256) in $OUT_BIN"
  else
    build_all "$recipe"
  fi
  install_into_tools
  step "done in $((SECONDS - START))s: $("$TOOLS_BIN/pulumi" version) at $TOOLS_BIN/pulumi"
  note "use it with:  . $REPO_ROOT/scripts/pulumi-env.sh"
}

main "$@"
