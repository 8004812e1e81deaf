package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
)

// Exit code used by pulumi-language-python-exec after it has already shown the
// user an actionable error message.
const userActionableExitCode = 32

// execScriptName is the SDK's program launcher, installed next to the host.
const execScriptName = "pulumi-language-python-exec"

// findExecScript locates pulumi-language-python-exec: next to the host binary
// self (symlinks resolved) first, then with lookPath (exec.LookPath: on PATH).
func findExecScript(self string, lookPath func(string) (string, error)) (string, error) {
	if self != "" {
		if resolved, err := filepath.EvalSymlinks(self); err == nil {
			self = resolved
		}
		candidate := filepath.Join(filepath.Dir(self), execScriptName)
		if _, err := os.Stat(candidate); err == nil {
			return candidate, nil
		}
	}
	p, err := lookPath(execScriptName)
	if err != nil {
		return "", fmt.Errorf("could not find %s next to the language host or on PATH", execScriptName)
	}
	return p, nil
}

func execScript() (string, error) {
	self, _ := os.Executable()
	return findExecScript(self, exec.LookPath)
}

// runInfo is the program info of a Run request; older engines send none.
func runInfo(req *pulumirpc.RunRequest) *pulumirpc.ProgramInfo {
	if info := req.GetInfo(); info != nil {
		return info
	}
	return &pulumirpc.ProgramInfo{RootDirectory: req.GetPwd(), ProgramDirectory: req.GetPwd(), EntryPoint: "."}
}

// entryPoint is the program (or plugin) to run: the entry point inside the
// program directory, the directory itself (its __main__.py) by default.
func entryPoint(info *pulumirpc.ProgramInfo) string {
	entry := info.GetEntryPoint()
	if entry == "" {
		entry = "."
	}
	return filepath.Join(info.GetProgramDirectory(), entry)
}

// programArgs is the Python argv (after the interpreter) that runs a program
// through the exec script.
func programArgs(script, engineAddress string, req *pulumirpc.RunRequest, info *pulumirpc.ProgramInfo) []string {
	args := []string{"-u", script,
		"--monitor", req.GetMonitorAddress(),
		"--engine", engineAddress,
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
	args = append(args, entryPoint(info))
	return append(args, req.GetArgs()...)
}

// programEnv is base plus the stack's configuration, as the Python SDK reads
// it: PULUMI_CONFIG a JSON object, PULUMI_CONFIG_SECRET_KEYS a JSON list
// (never null).
func programEnv(base []string, config map[string]string, secretKeys []string) ([]string, error) {
	if config == nil {
		config = map[string]string{}
	}
	if secretKeys == nil {
		secretKeys = []string{}
	}
	configJSON, err := json.Marshal(config)
	if err != nil {
		return nil, err
	}
	secretKeysJSON, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, err
	}
	env := append([]string(nil), base...)
	return append(env,
		"PULUMI_CONFIG="+string(configJSON),
		"PULUMI_CONFIG_SECRET_KEYS="+string(secretKeysJSON),
		"PYTHONUNBUFFERED=1",
	), nil
}

// pluginEnv is the environment of a Python plugin: the engine's (or else the
// host's own), with the toolchain's virtualenv activated when it has one.
func pluginEnv(requested, current []string, venv string) []string {
	environ := requested
	if len(environ) == 0 {
		environ = current
	}
	if venv != "" {
		environ = toolchain.ActivateVirtualEnv(environ, venv)
	}
	return append(append([]string(nil), environ...), "PYTHONUNBUFFERED=1")
}

// envOrCurrent is the environment a command will run with.
func envOrCurrent(cmd *exec.Cmd) []string {
	if cmd.Env != nil {
		return cmd.Env
	}
	return os.Environ()
}

// exitCode is the exit status of a finished process (128+N for signal N), and
// false when err is not about a process that ran.
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

// runResponse is the answer to Run for the program's outcome err (from
// cmd.Run).
func runResponse(err error) *pulumirpc.RunResponse {
	if err == nil {
		return &pulumirpc.RunResponse{}
	}
	code, ok := exitCode(err)
	switch {
	case !ok:
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("Problem executing program (could not run language executor): %v", err)}
	case code == userActionableExitCode:
		return &pulumirpc.RunResponse{Bail: true}
	default:
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("Program exited with non-zero exit code: %d", code)}
	}
}
