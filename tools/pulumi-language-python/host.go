package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/logging"
	"github.com/pulumi/pulumi/sdk/v3/go/common/version"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// host implements the LanguageRuntime service. Code generation (convert,
// package gen-sdk, import --generate-code) is left unimplemented.
type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	engineAddress string
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

func (h *host) GetRequiredPackages(ctx context.Context,
	req *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	deps, err := requiredPackages(ctx, req.GetInfo(), skipList(os.Getenv(skipPluginsEnv)))
	if err != nil {
		return nil, err
	}
	return &pulumirpc.GetRequiredPackagesResponse{Packages: deps}, nil
}

func (h *host) GetRequiredPlugins(ctx context.Context,
	req *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	deps, err := requiredPackages(ctx, req.GetInfo(), skipList(os.Getenv(skipPluginsEnv)))
	if err != nil {
		return nil, err
	}
	return &pulumirpc.GetRequiredPluginsResponse{Plugins: pluginDependencies(deps)}, nil
}

// typecheck runs the configured type checker in dir; false when it found
// errors (already shown to the user).
func typecheck(ctx context.Context, tc toolchain.Toolchain, o pythonOptions, dir string) (bool, error) {
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
	info := runInfo(req)
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
	if ok, err := typecheck(ctx, tc, o, info.GetProgramDirectory()); err != nil {
		return nil, err
	} else if !ok {
		return &pulumirpc.RunResponse{Bail: true}, nil
	}

	cmd, err := tc.Command(ctx, programArgs(script, h.engineAddress, req, info)...)
	if err != nil {
		return nil, err
	}
	if cmd.Env, err = programEnv(envOrCurrent(cmd), req.GetConfig(), req.GetConfigSecretKeys()); err != nil {
		return nil, err
	}
	cmd.Dir = req.GetPwd()
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	logging.V(5).Infof("python host: running %s %v", cmd.Path, cmd.Args)
	return runResponse(cmd.Run()), nil
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
	cmd, err := tc.Command(ctx, append([]string{"-u", entryPoint(info)}, req.GetArgs()...)...)
	if err != nil {
		return err
	}
	venv, err := tc.VirtualEnvPath(ctx)
	if err != nil {
		venv = ""
	}
	cmd.Env = pluginEnv(req.GetEnv(), os.Environ(), venv)
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
